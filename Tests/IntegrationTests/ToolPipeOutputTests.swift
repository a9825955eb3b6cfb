import Foundation
import Testing

/// `cat` of a plain file or an uncompressed tar's member into a pipe (the tests read the
/// tool's stdout through one): the bytes go by `sendfile`, and must be exactly the file's or
/// the member's, with `--offset`/`--length`, several in one run, and a truncated archive
/// still an error.
@Suite("The blobstream tool: members into a pipe")
struct ToolPipeOutputTests {
    final class Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-tool-pipe-\(UUID())")
        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: url) }
        func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    }

    @Test("a plain file into a pipe: the right bytes, whole, from an offset, with a length, twice in one run")
    func plainFile() async throws {
        let folder = try Folder()
        let path = folder.path("r.bin")
        let made = try await Tool.shell("head -c 5000000 /dev/urandom > \(path)")
        try #require(made.status == 0, "\(made.stderr)")
        let r = try Data(contentsOf: URL(fileURLWithPath: path))
        let whole = try await Tool.blobstream(["cat", path, path])
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(Tool.sha256(whole.stdout) == Tool.sha256(r + r))
        let part = try await Tool.blobstream(["cat", "--offset", "12345", "--length", "3000000", path])
        #expect(part.status == 0, "\(part.stderr)")
        #expect(Tool.sha256(part.stdout) == Tool.sha256(r[12345..<3_012_345]))
        let tail = try await Tool.blobstream(["cat", "--offset", "4999999", path])
        #expect(tail.stdout == r.suffix(1))
    }

    @Test("tar members into a pipe: the right bytes, whole, in part and one after another; a cut archive fails")
    func tarMembers() async throws {
        let folder = try Folder()
        let made = try await Tool.shell(
            "set -e; cd \(folder.path("")); mkdir t; seq 1 200000 > t/a.txt; head -c 3000000 /dev/urandom > t/r.bin; echo small > t/s.txt; tar -cf a.tar -C t a.txt r.bin s.txt"
        )
        try #require(made.status == 0, "\(made.stderr)")
        let tar = folder.path("a.tar")
        let r = try Data(contentsOf: URL(fileURLWithPath: folder.path("t/r.bin")))
        let a = try Data(contentsOf: URL(fileURLWithPath: folder.path("t/a.txt")))

        let whole = try await Tool.blobstream(["cat", tar + "!/r.bin"])
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(Tool.sha256(whole.stdout) == Tool.sha256(r))

        let part = try await Tool.blobstream(["cat", "--offset", "1000", "--length", "1500000", tar + "!/r.bin"])
        #expect(part.status == 0, "\(part.stderr)")
        #expect(Tool.sha256(part.stdout) == Tool.sha256(r[1000..<1_501_000]))

        let both = try await Tool.blobstream(["cat", tar + "!/r.bin", tar + "!/a.txt", tar + "!/s.txt"])
        #expect(both.status == 0, "\(both.stderr)")
        #expect(Tool.sha256(both.stdout) == Tool.sha256(r + a + Data("small\n".utf8)))

        // Cut inside r.bin: what is there comes out, then the error naming the member.
        let cut = folder.path("cut.tar")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: tar))
        let start = try #require(bytes.range(of: r.prefix(4096))).lowerBound
        try bytes.prefix(start + 2_000_000).write(to: URL(fileURLWithPath: cut))
        let truncated = try await Tool.blobstream(["cat", cut + "!/r.bin"])
        #expect(truncated.status == 1)
        #expect(truncated.stderr.contains("r.bin") && truncated.stderr.contains("truncated"), "\(truncated.stderr)")
        #expect(truncated.stdout == r.prefix(truncated.stdout.count))
    }

    @Test(
        "decoded sources into a pipe (written on a thread of their own) between files sent whole: the bytes in order; a reader that stops early ends the run"
    )
    func decodedAndSentInOrder() async throws {
        let folder = try Folder()
        let made = try await Tool.shell(
            """
            set -e; cd \(folder.path("")); head -c 3000000 /dev/urandom > r.bin; seq 1 300000 > a.txt
            zstd -q -c a.txt > a.zst; gzip -c r.bin > r.gz; mkdir t; cp r.bin t/; tar -cf t.tar -C t r.bin
            zstd -q -c r.bin > r.zst
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let r = try Data(contentsOf: URL(fileURLWithPath: folder.path("r.bin")))
        let a = try Data(contentsOf: URL(fileURLWithPath: folder.path("a.txt")))
        let sources = [
            "zstd:" + folder.path("a.zst"), folder.path("r.bin"), "gzip:" + folder.path("r.gz"),
            folder.path("t.tar") + "!/r.bin", "zstd:" + folder.path("a.zst"),
        ]
        let mixed = try await Tool.blobstream(["cat"] + sources)
        #expect(mixed.status == 0, "\(mixed.stderr)")
        #expect(Tool.sha256(mixed.stdout) == Tool.sha256(a + r + r + r + a))
        let part = try await Tool.blobstream([
            "cat", "--offset", "1000", "--length", "2000000", "zstd:" + folder.path("r.zst"),
        ])
        #expect(part.status == 0 && Tool.sha256(part.stdout) == Tool.sha256(r[1000..<2_001_000]), "\(part.stderr)")
        // The pipe's reader goes after 1000 bytes: the tool ends (no hang), with nothing more to say
        // on stdout than what was taken.
        let early = try await Tool.shell(
            "\"$BLOBSTREAM\" cat zstd:\(folder.path("r.zst")) zstd:\(folder.path("r.zst")) | head -c 1000 | wc -c")
        #expect(early.text.trimmingCharacters(in: .whitespacesAndNewlines) == "1000", "\(early.text) \(early.stderr)")
    }
}
