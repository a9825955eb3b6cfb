import Foundation
import Testing

@Suite("The blobstream tool: tar.xz member indexes")
struct ToolTarXzIndexTests {
    @Test("index A.tar.xz writes A.tar.xz.blobidx; cat reads every member through it (from offsets too); ls lists them")
    func indexThenCat() async throws {
        let folder = try ToolArchiveIndexTests.Folder()
        let made = try await Tool.shell(
            """
            set -e; cd \(folder.path("")); mkdir -p src/d; printf 'first' > src/d/first.txt; seq 1 300000 > src/d/a.txt
            head -c 2000000 /dev/urandom > src/b.bin; printf 'small' > src/d/c.txt
            cd src; tar --format=pax -cf - d/first.txt d/a.txt b.bin d/c.txt | xz -T2 --block-size=256KiB > ../photos.tar.xz
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let archive = folder.path("photos.tar.xz")

        let indexed = try await Tool.blobstream(["index", archive])
        #expect(indexed.status == 0, "\(indexed.stderr)")
        #expect(indexed.text.hasPrefix(archive + ".blobidx\t4 members (tar.xz)"), "\(indexed.text)")
        for member in ["d/first.txt", "d/a.txt", "b.bin", "d/c.txt"] {
            let expected = try Data(contentsOf: URL(fileURLWithPath: folder.path("src/" + member)))
            let cat = try await Tool.blobstream(["cat", archive + "!/" + member])
            #expect(cat.status == 0, "\(member): \(cat.stderr)")
            #expect(Tool.sha256(cat.stdout) == Tool.sha256(expected), "\(member)")
            let offset = expected.count / 2
            let part = try await Tool.blobstream(["cat", "--offset", String(offset), archive + "!/" + member])
            #expect(part.status == 0 && part.stdout == expected.suffix(from: offset), "\(member) at \(offset)")
        }
        let listed = try await Tool.blobstream(["ls", archive])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.text.contains("d/a.txt") && listed.text.contains("b.bin") && listed.text.contains("d/c.txt"))
    }
}
