import BlobStream
import BlobStreamFiles
import BlobStreamSources
import BlobStreamZstd
import Foundation
import Testing

/// A zstd frame index sealed with a key (`IndexSeal`), through `BlobSources.indexKey`: with
/// the key it is used; with another key, without its seal, or with a frame's record changed
/// (its CRC-32 recomputed) it is ignored as a stale one is (the same bytes, decoded from the
/// start), and a named one refused; without a key a sealed index is used as before.
@Suite("Zstd frame index sealed with a key")
struct ZstdFrameIndexSealTests {
    static let key = try! IndexKey(text: String(repeating: "7e", count: 32))
    static let otherKey = try! IndexKey(text: String(repeating: "e7", count: 32))

    /// The source `BlobSources` makes of `zstd:` over the file at `path`, with `key`.
    static func source(_ path: String, key: IndexKey?, named: String? = nil) throws -> ZstdDataSource {
        var sources = BlobSources(indexes: named.map { .named($0, acceptsUnchecked: false) } ?? .beside)
        sources.indexKey = key
        let url = "zstd:" + URL(fileURLWithPath: path).absoluteString
        return try #require(try sources.makeRegistry().makeSource(url: url) as? ZstdDataSource)
    }

    @Test("sealed with K: used with K and with no key; another key, no seal, a changed frame: not used")
    func sealed() throws {
        let dir = try ZstdFrameIndexTests.makeTemporaryDirectory("zstidx-seal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try ZstdFrameIndexTests.write(try ZstdFrameIndexTests.framed(regular: false), in: dir, as: "s.zst")
        let index = try ZstdFrameIndex.build(fileAtPath: path)
        let sidecar = ZstdFrameIndex.sidecar(of: path)
        let sealed = index.sealing(index.encoded(), with: Self.key)
        try Data(sealed).write(to: URL(fileURLWithPath: sidecar))
        let expected = ZstdFrameIndexTests.content[1_500_000..<1_501_000]

        let keyed = try Self.source(path, key: Self.key)
        #expect(keyed.frameIndex == index && keyed.unusedIndexReason == nil)
        let got = readRange(keyed, at: 1_500_000, count: 1000)
        #expect(got.error == nil && got.data == expected)
        #expect(try Self.source(path, key: nil).frameIndex == index) // the seal set aside
        #expect(try ZstdFrameIndex.read(indexFileAt: sidecar) == index)
        #expect(try Self.source(path, key: Self.key, named: sidecar).frameIndex == index)

        try Data(index.sealing(index.encoded(), with: Self.otherKey)).write(to: URL(fileURLWithPath: sidecar))
        let other = try Self.source(path, key: Self.key)
        #expect(other.frameIndex == nil)
        #expect(
            other.unusedIndexReason?.contains("does not verify") == true,
            "\(String(describing: other.unusedIndexReason))")
        let slow = readRange(other, at: 1_500_000, count: 1000)
        #expect(slow.error == nil && slow.data == expected)

        try Data(index.encoded()).write(to: URL(fileURLWithPath: sidecar))
        let unsealed = try Self.source(path, key: Self.key)
        #expect(unsealed.frameIndex == nil && unsealed.unusedIndexReason?.contains("not sealed") == true)
        #expect(try Self.source(path, key: nil).frameIndex == index)

        // A frame's checksum changed, the index's CRC-32 recomputed by encoding it again, the
        // seal found kept: believed without a key, not with one.
        var frames = index.frames.frames
        frames[3].checksum = (frames[3].checksum ?? 0) ^ 1
        let lying = ZstdFrameIndex(frames: try #require(ZstdSeekTable.placing(frames)), identity: index.identity)
        let forged = lying.encoded() + sealed.suffix(IndexSeal.trailerLength)
        #expect(forged.count == sealed.count && forged != sealed)
        try Data(forged).write(to: URL(fileURLWithPath: sidecar))
        #expect(try Self.source(path, key: nil).frameIndex == lying)
        #expect(try Self.source(path, key: Self.key).frameIndex == nil)
        #expect(throws: BlobStreamError.self) { _ = try Self.source(path, key: Self.key, named: sidecar) }
    }
}
