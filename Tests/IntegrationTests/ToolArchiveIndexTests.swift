import Foundation
import Testing

@Suite("The blobstream tool: archive member indexes")
struct ToolArchiveIndexTests {
    /// A temporary folder for one test.
    final class Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-tool-blobidx-\(UUID())")
        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: url) }
        func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    }

    @Test(
        "index ARCHIVE writes ARCHIVE.blobidx for a tar and a zip; cat reads members through it with tar's bytes; a changed archive is read without it",
        arguments: ["tar", "zip"])
    func indexThenCat(format: String) async throws {
        let folder = try Folder()
        let made = try await Tool.shell(
            """
            set -e; cd \(folder.path("")); mkdir -p src/d; seq 1 50000 > src/d/a.txt; head -c 300000 /dev/urandom > src/b.bin
            printf 'small' > src/d/c.txt; cd src; bsdtar -a -cf ../photos.\(format) d b.bin
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let archive = folder.path("photos.\(format)")

        let indexed = try await Tool.blobstream(["index", archive])
        #expect(indexed.status == 0, "\(indexed.stderr)")
        #expect(
            indexed.text.hasPrefix(archive + ".blobidx\t3 members")
                || indexed.text.hasPrefix(archive + ".blobidx\t4 members"), "\(indexed.text)")
        #expect(FileManager.default.fileExists(atPath: archive + ".blobidx"))

        for member in ["d/a.txt", "b.bin", "d/c.txt"] {
            let expected = try Data(contentsOf: URL(fileURLWithPath: folder.path("src/" + member)))
            let cat = try await Tool.blobstream(["cat", archive + "!/" + member])
            #expect(cat.status == 0, "\(cat.stderr)")
            #expect(Tool.sha256(cat.stdout) == Tool.sha256(expected), "\(member)")
        }
        let listed = try await Tool.blobstream(["ls", archive])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.text.contains("d/a.txt") && listed.text.contains("b.bin"))

        // The archive is replaced: the index beside it no longer matches and is not used.
        let remade = try await Tool.shell(
            "set -e; cd \(folder.path("src")); seq 7 40000 > d/a.txt; rm -f ../photos.\(format); bsdtar -a -cf ../photos.\(format) d b.bin"
        )
        try #require(remade.status == 0, "\(remade.stderr)")
        let fresh = try await Tool.blobstream(["cat", archive + "!/d/a.txt"])
        #expect(fresh.status == 0, "\(fresh.stderr)")
        #expect(fresh.stdout == (try await Tool.shell("seq 7 40000")).stdout)
    }

    @Test("index of something that is neither gzip nor an archive: exit 1, one line naming it")
    func notAnArchive() async throws {
        let folder = try Folder()
        let path = folder.path("plain.txt")
        try Data("just text, not an archive\n".utf8).write(to: URL(fileURLWithPath: path))
        let result = try await Tool.blobstream(["index", path])
        #expect(result.status == 1)
        #expect(result.stderr.contains(path), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: path + ".blobidx"))
    }
}
