import BlobStream
import BlobStreamArchive
import BlobStreamGzip
import Foundation
import SharedTestHelpers
import Testing

/// A tar.gz's member index read from its file keeps its gzip windows there: the same bytes
/// as libarchive's, and a window lost after loading fails the member, never wrong bytes.
@Suite("Archive member index: a tar.gz's index file read without holding it")
struct TarGzipIndexFileTests {
    @Test("read from its file: the same index, the same members; cut after loading: an error naming the index")
    func windowsStayInTheFile() throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("tgz-index-file")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tar.gz"
        try TarGzipIndexTests.gzip(try #require(fixtures.archives["gnu.tar"]), to: path, multi: false)
        let built = try ArchiveIndex.build(archiveAt: path, gzipSpacing: TarGzipIndexTests.spacing, engine: .zlib)
        let indexPath = ArchiveIndex.sidecar(of: path)
        try built.write(to: indexPath)
        let loaded = try ArchiveIndex.read(from: indexPath)
        #expect(loaded == built)
        #expect(loaded.encoded() == built.encoded())
        let names = ArchiveIndexTests.members(loaded)
        let gzipIndex = try #require(loaded.gzipIndex)
        #expect(gzipIndex.points.filter(\.hasWindow).count > 4)
        var references: [String: Data] = [:]
        for name in names {
            let reference = drain(ArchiveMemberDataSource(archive: path, member: name, index: .none))
            let given = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(loaded)))
            #expect(reference.error == nil && given.error == nil, "\(name)")
            #expect(sha256(given.data) == sha256(reference.data), "\(name)")
            references[name] = reference.data
        }
        // Cut the index file inside its gzip windows (the last member's are lost).
        let size = try #require(try FileManager.default.attributesOfItem(atPath: indexPath)[.size] as? Int)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: indexPath))
        try handle.truncate(atOffset: UInt64(size - 32 * 1024 - 2000))
        try handle.close()
        var failed = 0
        for name in names {
            let given = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(loaded)))
            let reference = try #require(references[name])
            #expect(given.data == reference.prefix(given.data.count), "\(name): a prefix of the true bytes")
            if let error = given.error {
                failed += 1
                #expect(error.message.contains(indexPath), "\(name): \(error.message)")
            } else {
                #expect(given.data == reference, "\(name)")
            }
        }
        #expect(failed > 0, "a member past a lost window must fail")
    }
}
