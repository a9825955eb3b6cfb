import Foundation
import Testing

@Suite("The blobstream tool: gzip seek-point indexes")
struct ToolGzipIndexTests {
    /// A temporary folder with a gzip file of two members (text, then random bytes).
    final class Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-tool-gzidx-\(UUID())")
        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: url) }
        func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    }

    @Test("index writes FILE.gz.gzidx; cat and checksum --offset use it (or --index), with the bytes gzip -dc gives")
    func indexThenOffsets() async throws {
        let folder = try Folder()
        let gz = folder.path("data.gz")
        let made = try await Tool.shell(
            "set -e; (seq 1 400000; head -c 700000 /dev/urandom) > \(folder.path("data")); gzip -c \(folder.path("data")) > \(gz)"
        )
        try #require(made.status == 0, "\(made.stderr)")
        let plain = try Data(contentsOf: URL(fileURLWithPath: folder.path("data")))

        let indexed = try await Tool.blobstream(["index", "--spacing", "262144", gz])
        #expect(indexed.status == 0, "\(indexed.stderr)")
        #expect(indexed.text.hasPrefix(gz + ".gzidx\t"))
        #expect(FileManager.default.fileExists(atPath: gz + ".gzidx"))

        for offset in [1_500_000, 10, 2_900_000] {
            let cat = try await Tool.blobstream(["cat", "--offset", "\(offset)", "gzip:file://" + gz])
            #expect(cat.status == 0, "\(cat.stderr)")
            #expect(Tool.sha256(cat.stdout) == Tool.sha256(plain[offset...]), "offset \(offset)")
        }
        let sum = try await Tool.blobstream([
            "checksum", "--offset", "1000000", "--index", gz + ".gzidx", "gzip:file://" + gz,
        ])
        #expect(sum.status == 0, "\(sum.stderr)")
        #expect(sum.text.hasPrefix(Tool.sha256(plain[1_000_000...])))

        // Another file named with --index: refused, naming both; exit status 1.
        let other = folder.path("other.gz")
        _ = try await Tool.shell("seq 1 1000 | gzip -c > \(other)")
        let refused = try await Tool.blobstream([
            "cat", "--offset", "5", "--index", gz + ".gzidx", "gzip:file://" + other,
        ])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains(gz + ".gzidx") && refused.stderr.contains(other))

        // The file changed: the stale sidecar beside it is not used; the bytes are still right.
        _ = try await Tool.shell("seq 5 300000 | gzip -c > \(gz)")
        let fresh = try await Tool.shell("seq 5 300000")
        let stale = try await Tool.blobstream(["cat", "--offset", "1000", "gzip:file://" + gz])
        #expect(stale.status == 0, "\(stale.stderr)")
        #expect(stale.stdout == fresh.stdout[1000...])
    }
}
