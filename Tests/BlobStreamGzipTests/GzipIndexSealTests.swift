import BlobStream
import BlobStreamCompression
import BlobStreamFiles
import BlobStreamGzip
import Foundation
import Testing

/// A gzip index sealed with a key (`IndexSeal`): with the key it is used; with another key,
/// without its seal, or changed by someone without the key (its own CRC-32s recomputed) it is
/// not; without a key it is read as before, the seal set aside.
@Suite("Gzip index sealed with a key")
struct GzipIndexSealTests {
    static let key = try! IndexKey(bytes: [UInt8](repeating: 0x5A, count: 32))
    static let otherKey = try! IndexKey(bytes: [UInt8](repeating: 0xA5, count: 32))
    static let plain = textBytes(3_000_000, seed: 77)

    /// A gzip file and its index (256 KiB spacing), in `folder`.
    static func indexedFile(_ folder: IndexTestFolder) throws -> (path: String, index: GzipIndex) {
        let path = try folder.write("sealed.gz", Gzip.compress(plain))
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10)
        #expect(index.points.count > 4)
        return (path, index)
    }

    /// The bytes from `offset` on, read through `index` (which the source must use).
    static func read(_ path: String, through index: GzipIndex, from offset: Int64) throws -> Data {
        let source = GzipDataSource(upstream: FileDataSource(path: path), name: path, index: index)
        #expect(source.decoding.usesIndex)
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        #expect(stream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey))
        stream.open()
        defer { stream.close() }
        let (data, last) = stream.readToEnd(chunkSize: 100_000)
        #expect(last == 0, "\(String(describing: stream.streamError))")
        return data
    }

    /// What the locator makes of the sidecar of `path` with `key`.
    static func sidecarUse(_ path: String, key: IndexKey?) throws -> String {
        switch try GzipIndex.lookUp(forFileAtPath: path, key: key) {
        case .matching: "matching"
        case .absent: "absent"
        case .unusable(let reason): "unusable: \(reason)"
        }
    }

    @Test("keys: hex or base64 of 32 bytes or more; a short key, an empty one or other text is refused")
    func keys() throws {
        let hex = String(repeating: "0f", count: 32)
        #expect(try IndexKey(text: hex) == IndexKey(bytes: [UInt8](repeating: 0x0F, count: 32)))
        #expect(try IndexKey(text: " \(hex.uppercased())\n") == IndexKey(bytes: [UInt8](repeating: 0x0F, count: 32)))
        let base64 = Data(repeating: 0x0F, count: 48).base64EncodedString()
        #expect(try IndexKey(text: base64) == IndexKey(bytes: [UInt8](repeating: 0x0F, count: 48)))
        for bad in ["", String(repeating: "0f", count: 31), "not a key!", Data(count: 16).base64EncodedString()] {
            #expect {
                try IndexKey(text: bad)
            } throws: { error in
                let error = error as? BlobStreamError
                return error?.code == .unsupported && error?.message.contains("at least 32 bytes") == true
            }
        }
        #expect(try IndexKey.fromEnvironment([:]) == nil)
        #expect(try IndexKey.fromEnvironment([IndexKey.environmentVariable: hex]) != nil)
        #expect {
            try IndexKey.fromEnvironment([IndexKey.environmentVariable: "abc"])
        } throws: { error in
            (error as? BlobStreamError)?.message.hasPrefix(IndexKey.environmentVariable) == true
        }
    }

    @Test("sealed with K: used with K (an offset read through it); read as before without a key")
    func usedWithItsKey() throws {
        let folder = try IndexTestFolder()
        let (path, index) = try Self.indexedFile(folder)
        let sealed = index.sealing(index.serialized(), with: Self.key)
        #expect(sealed.count == index.serialized().count + IndexSeal.trailerLength)
        #expect(IndexSeal.isSealed(sealed))
        try Data(sealed).write(to: URL(fileURLWithPath: GzipIndex.sidecar(of: path)))

        #expect(try Self.sidecarUse(path, key: Self.key) == "matching")
        guard case .matching(let found) = try GzipIndex.lookUp(forFileAtPath: path, key: Self.key) else {
            Issue.record("not used")
            return
        }
        #expect(found.points.count == index.points.count && found.hasChunkCRC32s)
        let offset: Int64 = 2_500_000
        #expect(try Self.read(path, through: found, from: offset) == Self.plain.suffix(from: Int(offset)))

        // No key: the seal is set aside, the index read lazily from its file as before.
        #expect(try Self.sidecarUse(path, key: nil) == "matching")
        let lazy = try GzipIndex.read(fromPath: GzipIndex.sidecar(of: path))
        #expect(lazy.points.count == index.points.count)
        #expect(try Self.read(path, through: lazy, from: offset) == Self.plain.suffix(from: Int(offset)))
        #expect(try GzipIndex(serialized: sealed, name: "sealed").points.count == index.points.count)
        // Named, with its key.
        guard
            case .matching = try GzipIndex.lookUp(
                forFileAtPath: path, indexPath: GzipIndex.sidecar(of: path), key: Self.key)
        else {
            Issue.record("named, not used")
            return
        }
    }

    @Test("with K set: another key's seal, no seal, or a window changed with the CRC-32s recomputed is not used")
    func refusedWithoutItsSeal() throws {
        let folder = try IndexTestFolder()
        let (path, index) = try Self.indexedFile(folder)
        let sidecar = GzipIndex.sidecar(of: path)
        let sealed = index.sealing(index.serialized(), with: Self.key)

        // Another key.
        try Data(index.sealing(index.serialized(), with: Self.otherKey)).write(to: URL(fileURLWithPath: sidecar))
        let other = try Self.sidecarUse(path, key: Self.key)
        #expect(
            other.hasPrefix("unusable: ") && other.contains("does not verify") && other.contains(sidecar), "\(other)")

        // Its seal stripped: an index as today's builds write it.
        try Data(index.serialized()).write(to: URL(fileURLWithPath: sidecar))
        let unsealed = try Self.sidecarUse(path, key: Self.key)
        #expect(unsealed.hasPrefix("unusable: ") && unsealed.contains("not sealed"), "\(unsealed)")
        #expect(try Self.sidecarUse(path, key: nil) == "matching")

        // The attack: a writer of the index without the key changes a window (the record's
        // CRC-32 recomputed by serializing again) and keeps the seal it found.
        var lying = index
        var window = try #require(lying.points[2].window)
        window[window.count - 1] ^= 0x20
        lying.points[2].window = window
        let forged = lying.serialized() + sealed.suffix(IndexSeal.trailerLength)
        #expect(forged.count == sealed.count && forged != sealed)
        try Data(forged).write(to: URL(fileURLWithPath: sidecar))
        let changed = try Self.sidecarUse(path, key: Self.key)
        #expect(changed.hasPrefix("unusable: ") && changed.contains("does not verify"), "\(changed)")
        // Without a key the forged index is believed: what the key adds.
        #expect(try Self.sidecarUse(path, key: nil) == "matching")

        // Named: refused, naming it.
        #expect {
            try GzipIndex.lookUp(forFileAtPath: path, indexPath: sidecar, key: Self.key)
        } throws: { error in
            let error = error as? BlobStreamError
            return error?.code == .corrupt && error?.message.contains(sidecar) == true
        }
        try Data(index.serialized()).write(to: URL(fileURLWithPath: sidecar))
        #expect {
            try GzipIndex.lookUp(forFileAtPath: path, indexPath: sidecar, key: Self.key)
        } throws: { error in
            (error as? BlobStreamError)?.code == .unsupported
        }
    }

    @Test("the seal binds the index to its file: a sealed index copied beside another file is not used")
    func boundToItsFile() throws {
        let folder = try IndexTestFolder()
        let (path, index) = try Self.indexedFile(folder)
        let sealed = index.sealing(index.serialized(), with: Self.key)
        // The same tag recomputed for another identity differs: the identity is covered.
        var moved = index
        moved.identity?.size += 1
        #expect(moved.sealing(moved.serialized(), with: Self.key).suffix(32) != sealed.suffix(32))
        let copy = try folder.write("copy.gz", Data(contentsOf: URL(fileURLWithPath: path)))
        // Another time, for certain: the kernel stamps files written within one clock tick
        // (4 ms) with the same time.
        let original = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
        try FileManager.default.setAttributes(
            [.modificationDate: original.addingTimeInterval(60)], ofItemAtPath: copy)
        try Data(sealed).write(to: URL(fileURLWithPath: GzipIndex.sidecar(of: copy)))
        // Another file (another time): the identity in the index does not match, as today.
        #expect(try Self.sidecarUse(copy, key: Self.key).hasPrefix("unusable: "))
    }
}
