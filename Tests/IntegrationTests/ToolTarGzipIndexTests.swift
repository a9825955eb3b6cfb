import Foundation
import Testing

@Suite("The blobstream tool: tar.gz member indexes")
struct ToolTarGzipIndexTests {
    @Test(
        "index A.tar.gz writes A.tar.gz.blobidx and A.tar.gz.gzidx; cat and ls use them; damage after a member does not touch it; --inflate reaches it"
    )
    func indexThenCat() async throws {
        let folder = try ToolArchiveIndexTests.Folder()
        let made = try await Tool.shell(
            """
            set -e; cd \(folder.path("")); mkdir -p src/d; printf 'first' > src/d/first.txt; seq 1 300000 > src/d/a.txt
            head -c 2000000 /dev/urandom > src/b.bin; printf 'small' > src/d/c.txt
            cd src; tar --format=pax -czf ../photos.tar.gz d/first.txt d/a.txt b.bin d/c.txt
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let archive = folder.path("photos.tar.gz")

        let indexed = try await Tool.blobstream(["index", "--spacing", "65536", archive])
        #expect(indexed.status == 0, "\(indexed.stderr)")
        let lines = indexed.text.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(indexed.text)")
        #expect(lines.first?.hasPrefix(archive + ".blobidx\t4 members (tar.gz)") == true, "\(indexed.text)")
        #expect(lines.last?.hasPrefix(archive + ".gzidx\t") == true, "\(indexed.text)")
        #expect(FileManager.default.fileExists(atPath: archive + ".blobidx"))
        #expect(FileManager.default.fileExists(atPath: archive + ".gzidx"))

        for member in ["d/first.txt", "d/a.txt", "b.bin", "d/c.txt"] {
            let expected = try Data(contentsOf: URL(fileURLWithPath: folder.path("src/" + member)))
            for engine in ["auto", "zlib"] {
                let cat = try await Tool.blobstream(["cat", "--inflate", engine, archive + "!/" + member])
                #expect(cat.status == 0, "\(member) \(engine): \(cat.stderr)")
                #expect(Tool.sha256(cat.stdout) == Tool.sha256(expected), "\(member) \(engine)")
            }
        }
        let listed = try await Tool.blobstream(["ls", archive])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.text.contains("d/a.txt") && listed.text.contains("b.bin") && listed.text.contains("d/c.txt"))
        // The seek points serve gzip: sources too.
        let tail = try await Tool.blobstream(["checksum", "--offset", "1000000", "gzip:file://" + archive])
        #expect(tail.status == 0, "\(tail.stderr)")

        // Flip a compressed byte well after the first member, between the samples the index's
        // identity checks (so that it still matches: damage, not a change), keeping size and
        // time: through the index the first member reads (nothing after it is read); without
        // it, the default verification reads the stream to its end and fails.
        let damaged = try await Tool.shell(
            """
            set -e; f=\(archive); size=$(stat -c %s "$f"); t=$(stat -c %y "$f"); pos=$((size * 23 / 32))
            b=$(dd if="$f" bs=1 skip=$pos count=1 status=none | od -An -tu1 | tr -d ' ')
            printf "\\\\$(printf %03o $((255 - b)))" | dd of="$f" bs=1 seek=$pos conv=notrunc status=none
            touch -d "$t" "$f"
            """)
        try #require(damaged.status == 0, "\(damaged.stderr)")
        let first = try await Tool.blobstream(["cat", archive + "!/d/first.txt"])
        #expect(first.status == 0 && first.text == "first", "\(first.stderr)")
        try FileManager.default.moveItem(atPath: archive + ".blobidx", toPath: folder.path("saved.blobidx"))
        let unindexed = try await Tool.blobstream(["cat", archive + "!/d/first.txt"])
        #expect(unindexed.status == 1, "\(unindexed.stderr)")
        #expect(unindexed.stderr.contains("photos.tar.gz"), "\(unindexed.stderr)")
    }

    @Test("index of a gzip file that holds no tar still writes a plain FILE.gz.gzidx")
    func plainGzip() async throws {
        let folder = try ToolArchiveIndexTests.Folder()
        let gz = folder.path("data.gz")
        let made = try await Tool.shell("set -e; seq 1 200000 | gzip -c > \(gz)")
        try #require(made.status == 0, "\(made.stderr)")
        let indexed = try await Tool.blobstream(["index", gz])
        #expect(indexed.status == 0, "\(indexed.stderr)")
        #expect(indexed.text.hasPrefix(gz + ".gzidx\t"), "\(indexed.text)")
        #expect(!FileManager.default.fileExists(atPath: gz + ".blobidx"))
    }
}
