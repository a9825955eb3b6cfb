import BlobStream
import BlobStreamCompression
import Foundation
import Testing

/// A small valid index file's bytes (GZIDX + BlobStream's record) and its parts' positions.
private struct ValidSidecar {
    let bytes: [UInt8]
    let points: Int
    /// Where the windows start (after the 35-byte header and 18 bytes per point).
    var windowsStart: Int { 35 + 18 * points }

    static let shared = Result { () throws -> ValidSidecar in
        let folder = try IndexTestFolder()
        // Random bytes: stored blocks, so block boundaries (seek points) come often.
        let path = try folder.write("s.gz", try Gzip.compress(randomBytes(400_000, seed: 7)))
        let index = try GzipIndex.build(fileAtPath: path, spacing: 50_000)
        return ValidSidecar(bytes: index.serialized(), points: index.points.count)
    }
}

/// A way to damage an index file.
struct Damage: CustomTestStringConvertible, Sendable {
    let testDescription: String
    let apply: @Sendable ([UInt8], Int) -> [UInt8]

    init(_ name: String, _ apply: @escaping @Sendable ([UInt8], Int) -> [UInt8]) {
        testDescription = name
        self.apply = apply
    }

    static func setting(_ name: String, at offset: Int, _ values: [UInt8]) -> Damage {
        Damage(name) { bytes, _ in
            var b = bytes
            b.replaceSubrange(offset..<offset + values.count, with: values)
            return b
        }
    }

    static let table: [Damage] = [
        Damage("empty") { _, _ in [] },
        Damage("magic only") { b, _ in Array(b.prefix(5)) },
        Damage("truncated in the header") { b, _ in Array(b.prefix(20)) },
        Damage("truncated in the point table") { b, _ in Array(b.prefix(35 + 18 + 7)) },
        Damage("truncated in a window") { b, points in Array(b.prefix(35 + 18 * points + 32768 + 100)) },
        Damage("truncated in BlobStream's record") { b, _ in Array(b.dropLast(9)) },
        Damage("last byte dropped") { b, _ in Array(b.dropLast()) },
        setting("wrong magic", at: 0, Array("GZIDY".utf8)),
        setting("version 2", at: 5, [2]),
        setting("reserved byte set", at: 6, [1]),
        setting("absurd point count", at: 31, [0xFF, 0xFF, 0xFF, 0x7F]),
        setting("point count 255", at: 31, [0xFF, 0, 0, 0]),
        setting("window size 4096", at: 27, [0, 0x10, 0, 0]),
        setting("absurd window size", at: 27, [0xFF, 0xFF, 0xFF, 0xFF]),
        setting("bit offset 9", at: 35 + 18 + 16, [9]),
        setting("compressed offset past the size", at: 35 + 18, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0]),
        setting("uncompressed size of 2^63", at: 15, [0, 0, 0, 0, 0, 0, 0, 0x80]),
        setting("a point past the end", at: 35 + 18 + 8, [0xFF, 0xFF, 0x7F, 0, 0, 0, 0, 0]),
        setting("points out of order", at: 35 + 36 + 8, [1, 0, 0, 0, 0, 0, 0, 0]),
        Damage("a flipped bit in the record") { b, _ in
            var c = b
            c[c.count - 10] ^= 0x04
            return c
        },
        Damage("junk after the record") { b, _ in b + [1, 2, 3] },
        Damage("junk instead of the record") { b, _ in
            let magic = Array("BSGZIDX".utf8)
            let at = (0...(b.count - magic.count)).last { Array(b[$0..<$0 + magic.count]) == magic }!
            return Array(b.prefix(at)) + Array(repeating: 0x41, count: 40)
        },
    ]
}

@Suite("Gzip index files") struct GzipIndexSidecarTests {
    @Test("a damaged index file is a clear error naming it, never a crash", arguments: Damage.table)
    func damaged(_ damage: Damage) throws {
        let valid = try ValidSidecar.shared.get()
        #expect(valid.points > 2)
        let bytes = damage.apply(valid.bytes, valid.points)
        #expect(bytes != valid.bytes)
        #expect {
            _ = try GzipIndex(serialized: bytes, name: "x.gz.gzidx")
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .corrupt && e!.message.hasPrefix("x.gz.gzidx: corrupt gzip index: ")
        }
    }

    @Test("an undamaged file reads back as the same index, and without BlobStream's record as a foreign one")
    func undamaged() throws {
        let valid = try ValidSidecar.shared.get()
        let index = try GzipIndex(serialized: valid.bytes, name: "x")
        #expect(index.serialized() == valid.bytes)
        #expect(index.identity != nil && index.hasChunkCRC32s)
        let gzidxEnd = valid.windowsStart + 32768 * index.points.filter { $0.window != nil }.count
        let foreign = try GzipIndex(serialized: Array(valid.bytes.prefix(gzidxEnd)), name: "x")
        #expect(foreign.identity == nil && !foreign.hasChunkCRC32s)
        #expect(foreign.points.map(\.window) == index.points.map(\.window))
    }

    @Test("a damaged index file read from disk is the same clear error as from memory", arguments: Damage.table)
    func damagedOnDisk(_ damage: Damage) throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("s.gz", try Gzip.compress(randomBytes(400_000, seed: 7)))
        let index = try GzipIndex.build(fileAtPath: path, spacing: 50_000)
        let valid = index.serialized()
        let bytes = damage.apply(valid, index.points.count)
        #expect(bytes != valid)
        let indexPath = try folder.write("s.gz.gzidx", Data(bytes))
        var fromMemory: BlobStreamError?
        do { _ = try GzipIndex(serialized: bytes, name: indexPath) } catch { fromMemory = error }
        #expect {
            _ = try GzipIndex.read(fromPath: indexPath)
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .corrupt && e!.message.hasPrefix("\(indexPath): corrupt gzip index: ")
        }
        #expect(fromMemory?.code == .corrupt)
    }

    @Test("a damaged sidecar beside the file is not used (rebuilt); named, it is an error")
    func damagedSidecarImplicitAndNamed() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("d.gz", try Gzip.compress(textBytes(300_000, seed: 8)))
        let sidecar = GzipIndex.sidecar(of: path)
        try Data("GZIDX garbage".utf8).write(to: URL(fileURLWithPath: sidecar))
        guard case .unusable(let reason) = try GzipIndex.lookUp(forFileAtPath: path) else {
            Issue.record("a damaged sidecar must not be used")
            return
        }
        #expect(reason.contains(sidecar))
        #expect(throws: BlobStreamError.self) { try GzipIndex.lookUp(forFileAtPath: path, indexPath: sidecar) }
        let rebuilt = try GzipIndex.loadOrBuild(forFileAtPath: path)
        #expect(rebuilt.uncompressedSize == 300_000)
    }
}
