import BlobStream
import BlobStreamArchive
import BlobStreamTestSupport
import Foundation
import Glibc
import Testing

/// `ArchiveMemberDataSource` as a `BlobStoredRegionProviding`: an uncompressed tar's member
/// found by walking its headers lies unchanged in the archive file; a compressed, checked or
/// piped one does not.
@Suite("An archive member's stored region")
struct ArchiveStoredRegionTests {
    /// A synchronous stream over the member, open.
    static func opened(_ archive: String, _ member: String) -> (BlobInputStream, ArchiveMemberDataSource) {
        let source = ArchiveMemberDataSource(archive: archive, member: member)
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        return (stream, source)
    }

    @Test("a tar's member: the rest of its bytes in the archive file, from where the stream is")
    func tarMember() throws {
        let fixtures = try ArchiveFixtures.get()
        let archive = try #require(fixtures.archives["ustar.tar"])
        let big = try #require(fixtures.files["sub/big.bin"])
        let (stream, source) = Self.opened(archive, "sub/big.bin")
        defer { stream.close() }
        let first = try #require(source.storedRegion)
        #expect(first.count == Int64(big.count))
        #expect(first.bytesInFile() == big)
        try stream.seek(to: 1000)
        let moved = try #require(source.storedRegion)
        #expect(moved.fileOffset == first.fileOffset + 1000 && moved.count == Int64(big.count - 1000))
        #expect(stream.readToEnd(chunkSize: 65_536).0 == big.dropFirst(1000))
        #expect(source.storedRegion == nil)
    }

    @Test("compressed, zipped (CRC-checked) or piped members: none", arguments: ["tar.gz", "zip", "tar.xz"])
    func noRegion(label: String) throws {
        let fixtures = try ArchiveFixtures.get()
        let archive = try #require(fixtures.archives[label])
        let (stream, source) = Self.opened(archive, "sub/big.bin")
        defer { stream.close() }
        #expect(source.lookup != nil, "\(label): \(String(describing: stream.streamError))")
        #expect(source.storedRegion == nil, "\(label)")
        #expect(stream.readToEnd(chunkSize: 65_536).0 == fixtures.files["sub/big.bin"], "\(label)")
    }

    @Test("a tar through a pipe: none (no file to move the bytes from)")
    func piped() throws {
        let fixtures = try ArchiveFixtures.get()
        let data = try Data(contentsOf: URL(fileURLWithPath: try #require(fixtures.archives["ustar.tar"])))
        let source = ArchiveMemberDataSource(archive: pipeSource(data), member: "sub/big.bin")
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        defer { stream.close() }
        #expect(source.storedRegion == nil)
        #expect(stream.readToEnd(chunkSize: 65_536).0 == fixtures.files["sub/big.bin"])
    }
}
