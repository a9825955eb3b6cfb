import BlobStream
import BlobStreamArchive
import BlobStreamTestSupport
import Foundation
import SharedTestHelpers
import Testing

/// A zip name holding a backslash is listed, indexed and found as stored (as unzip and
/// Python's zipfile show it): libarchive hands `back\slash.txt` out as `back/slash.txt`,
/// which a stored `back/slash.txt` may also be.
@Suite("Zip names with backslashes: one spelling")
struct ZipBackslashNameTests {
    /// The members, in the order written: a name libarchive rewrites, a real path it would
    /// be confused with, a name libarchive keeps (it has a `/`), and a plain one.
    static let members: [(String, Data)] = [
        (#"back\slash.txt"#, Data("stored with a backslash\n".utf8)),
        ("back/slash.txt", Data("stored in a folder\n".utf8)),
        (#"dir/a\b.txt"#, Data("kept by libarchive\n".utf8)),
        ("plain.txt", Data("plain\n".utf8)),
    ]

    /// Copies the committed `Fixtures/zip/backslash-names.zip` (written by Python's zipfile
    /// from `members`, 0 and 2 stored, 1 and 3 deflated; see Fixtures/zip/README.md) into a
    /// new folder as `A.zip`.
    static func makeZip() throws -> String {
        let zip = try committedFixture(
            "zip/backslash-names.zip", sha256: "02f4ab8e0a7a70f665a91072c072e40711a46b8ad3a601c8933f984c330cdd24")
        let dir = try makeTemporaryDirectory("zip-backslash")
        try write(zip, to: dir + "/A.zip")
        return dir + "/A.zip"
    }

    @Test("listed as stored, with and without an index; each listed name reads its member")
    func storedNames() throws {
        let archive = try Self.makeZip()
        defer { try? FileManager.default.removeItem(atPath: (archive as NSString).deletingLastPathComponent) }
        let index = try ArchiveIndex.build(archiveAt: archive)
        for option in [ArchiveIndexOption.none, .index(index)] {
            let listed = try ArchiveListing.entries(ofArchiveAt: archive, index: option)
            #expect(listed.map(\.path) == Self.members.map(\.0), "\(option)")
            for (entry, member) in zip(listed, Self.members) {
                let source = ArchiveMemberDataSource(archive: archive, member: entry.escapedPath, index: option)
                let read = drain(source)
                #expect(read.error == nil && read.data == member.1, "\(entry.escapedPath) \(option)")
            }
        }
        // The same over an upstream that is no file (the path a remote archive takes).
        let bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
        let listed = try ArchiveListing.entries(of: InMemoryDataSource(data: bytes), name: "A.zip")
        #expect(listed.map(\.path) == Self.members.map(\.0))
        for member in Self.members {
            let source = ArchiveMemberDataSource(
                archive: InMemoryDataSource(data: bytes), member: member.0, name: "A.zip")
            #expect(drain(source).data == member.1, "\(member.0)")
        }
    }

    @Test("read from a pipe (no central directory): each name reads its own member, never the other's")
    func storedNamesOverAPipe() throws {
        let archive = try Self.makeZip()
        defer { try? FileManager.default.removeItem(atPath: (archive as NSString).deletingLastPathComponent) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
        for member in Self.members {
            let read = drain(ArchiveMemberDataSource(archive: pipeSource(bytes), member: member.0, name: "A.zip"))
            #expect(read.error == nil && read.last == 0, "\(member.0): \(String(describing: read.error))")
            #expect(sha256(read.data) == sha256(member.1), "\(member.0): \(String(decoding: read.data, as: UTF8.self))")
        }
        // Listed as stored there too.
        let listed = try ArchiveListing.entries(of: pipeSource(bytes), name: "A.zip")
        #expect(listed.map(\.path) == Self.members.map(\.0))
    }
}
