import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@testable import BlobStreamArchive

/// The archive's own upstream for a path (`ArchiveFileSource`, internal) through the typed offset
/// API only, and the conformance checks (which check `.fileCurrentOffsetKey` too); the key
/// is also what the member tests of OffsetTests move through.
@Suite("ArchiveFileSource: typed offsets")
struct ArchiveFileSourceOffsetTests {
    static let bytes = TestData.pseudoRandom(800, seed: 0xA2C)

    @Test("seek before open, after open, past the end (naming the archive), readOffset after reads")
    func typedOffsets() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = try dir.file("upstream.bin", Self.bytes)
        let upstream = ArchiveFileSource(path: path)
        #expect(upstream.readOffset == 0)
        try upstream.seek(to: 300)
        #expect(upstream.readOffset == 300)
        upstream.open()
        #expect(upstream.isOpenCompleted && upstream.error == nil)
        var buffer = [UInt8](repeating: 0, count: 200)
        #expect(upstream.read(&buffer, maxLength: 200) == 200 && Data(buffer) == Self.bytes.subdata(in: 300..<500))
        #expect(upstream.readOffset == 500)

        try upstream.seek(to: 10)
        #expect(
            upstream.read(&buffer, maxLength: 50) == 50 && Data(buffer.prefix(50)) == Self.bytes.subdata(in: 10..<60))
        #expect(upstream.readOffset == 60)

        let pastEnd = #expect(throws: BlobStreamError.self) { try upstream.seek(to: 900) }
        #expect(pastEnd?.code == .invalidOffset)
        #expect(pastEnd?.message == "offset 900 is past the end of archive '\(path)' (800 bytes)")
        #expect(upstream.readOffset == 60, "a refused move changes nothing")
        #expect(upstream.error == nil)
        let negative = #expect(throws: BlobStreamError.self) { try upstream.seek(to: -1) }
        #expect(negative?.code == .invalidOffset)
        #expect(negative?.message.contains(path) == true)

        try upstream.seek(to: 800)
        #expect(upstream.isAtEnd)
        #expect(upstream.read(&buffer, maxLength: 1) == 0)
        upstream.close()
    }

    @Test("after a failure a move is refused, with the failure as cause")
    func afterFailure() throws {
        let upstream = ArchiveFileSource(path: "/no/such/archive.tar")
        upstream.open()
        let failure = try #require(upstream.error as? BlobStreamError)
        let refused = #expect(throws: BlobStreamError.self) { try upstream.seek(to: 0) }
        #expect(refused?.code == .invalidOffset)
        #expect(refused?.message.contains("/no/such/archive.tar") == true)
        #expect((refused?.cause as? BlobStreamError)?.message == failure.message)
    }

    @Test("the conformance checks pass", arguments: [0, 1, 200_003])
    func conformance(size: Int) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let bytes = TestData.pseudoRandom(size, seed: 7)
        let path = try dir.file("conformance.bin", bytes)
        let findings = SourceConformance.check(expected: bytes) { ArchiveFileSource(path: path) }
        #expect(findings.isEmpty, "\(findings)")
    }
}
