import Foundation
import Testing

/// What is there is used without asking: a matching `FILE.gz.gzidx` serves a plain
/// `cat gzip:FILE.gz` (decoded in parallel), and a zip's central directory finds a member
/// without a `.blobidx`. `--verbose` says so on stderr.
@Suite("The blobstream tool: indexes used without flags")
struct ToolIndexUseTests {
    final class Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-tool-index-use-\(UUID())")
        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: url) }
        func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    }

    @Test(
        "a plain cat gzip:FILE.gz uses the matching sidecar (parallel, checked); a stale one or --index none does not")
    func gzipSidecar() async throws {
        let folder = try Folder()
        let data = folder.path("data")
        let gz = folder.path("data.gz")
        let made = try await Tool.shell(
            "set -e; (seq 1 600000; head -c 900000 /dev/urandom) > \(data); gzip -c \(data) > \(gz)")
        try #require(made.status == 0, "\(made.stderr)")
        let plain = try Data(contentsOf: URL(fileURLWithPath: data))

        let before = try await Tool.blobstream(["cat", "--verbose", "gzip:" + gz])
        #expect(before.status == 0, "\(before.stderr)")
        #expect(Tool.sha256(before.stdout) == Tool.sha256(plain))
        #expect(before.stderr.contains("gzip:\(gz): read sequentially, no seek-point index"), "\(before.stderr)")

        let indexed = try await Tool.blobstream(["index", "--spacing", "262144", gz])
        try #require(indexed.status == 0, "\(indexed.stderr)")

        // No flag names the index: it is found beside the file, matched, and used.
        let quiet = try await Tool.blobstream(["cat", "gzip:" + gz])
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")
        #expect(Tool.sha256(quiet.stdout) == Tool.sha256(plain))
        let told = try await Tool.blobstream(["cat", "--verbose", "gzip:" + gz])
        #expect(told.status == 0, "\(told.stderr)")
        #expect(Tool.sha256(told.stdout) == Tool.sha256(plain))
        #expect(told.stderr.contains("gzip:\(gz): read through a seek-point index, decoded on "), "\(told.stderr)")
        let sum = try await Tool.blobstream(["checksum", "--verbose", "gzip:" + gz])
        #expect(sum.text.hasPrefix(Tool.sha256(plain)), "\(sum.stderr)")
        #expect(sum.stderr.contains("read through a seek-point index"), "\(sum.stderr)")

        // --index none: inflated from the start, the same bytes.
        let none = try await Tool.blobstream(["cat", "--verbose", "--index", "none", "gzip:" + gz])
        #expect(none.status == 0, "\(none.stderr)")
        #expect(Tool.sha256(none.stdout) == Tool.sha256(plain))
        #expect(none.stderr.contains("read sequentially, no seek-point index"), "\(none.stderr)")

        // The file is replaced (new bytes, size and time): the stale sidecar is not used.
        let changed = try await Tool.shell("set -e; seq 7 700000 | gzip -c > \(gz)")
        try #require(changed.status == 0)
        let fresh = try await Tool.shell("seq 7 700000")
        let stale = try await Tool.blobstream(["cat", "--verbose", "gzip:" + gz])
        #expect(stale.status == 0, "\(stale.stderr)")
        #expect(stale.stdout == fresh.stdout)
        #expect(stale.stderr.contains("read sequentially, no seek-point index"), "\(stale.stderr)")
        // --verbose says why the sidecar found was not used.
        #expect(stale.stderr.contains("; an index was found but not used: "), "\(stale.stderr)")
        #expect(stale.stderr.contains(gz + ".gzidx"), "\(stale.stderr)")
    }

    @Test("a zip member without a .blobidx is found through the central directory, its bytes checked")
    func zipCentralDirectory() async throws {
        let folder = try Folder()
        let made = try await Tool.shell(
            "set -e; cd \(folder.path("")); mkdir t; seq 1 300000 > t/text.txt; head -c 200000 /dev/urandom > t/r.bin; bsdtar --format zip -cf a.zip -C t text.txt r.bin; bsdtar --format zip --options zip:compression=store -cf s.zip -C t text.txt r.bin"
        )
        try #require(made.status == 0, "\(made.stderr)")
        for zip in ["a.zip", "s.zip"] {
            for member in ["text.txt", "r.bin"] {
                let expected = try Data(contentsOf: URL(fileURLWithPath: folder.path("t/" + member)))
                let cat = try await Tool.blobstream(["cat", "--verbose", folder.path(zip) + "!/" + member])
                #expect(cat.status == 0, "\(cat.stderr)")
                #expect(Tool.sha256(cat.stdout) == Tool.sha256(expected), "\(zip) \(member)")
                #expect(cat.stderr.contains(": found through the zip's central directory"), "\(cat.stderr)")
            }
        }
        // A flipped byte in a stored member's bytes: the CRC-32 check fails, naming the member.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: folder.path("s.zip")))
        let at = bytes.range(of: Data("100000\n".utf8))!.lowerBound
        bytes[at] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: folder.path("bad.zip")))
        let bad = try await Tool.blobstream(["cat", folder.path("bad.zip") + "!/text.txt"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("member 'text.txt'") && bad.stderr.contains("CRC check failed"), "\(bad.stderr)")
    }
}
