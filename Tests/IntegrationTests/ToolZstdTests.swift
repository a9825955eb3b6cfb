import Foundation
import Testing

/// `blobstream cat|checksum zstd:…` on files the `zstd` program wrote.
@Suite("The blobstream tool: zstd: sources")
struct ToolZstdTests {
    @Test("cat and checksum of zstd:FILE (a relative path): zstd -dc's bytes; --long N for a large window")
    func catAndChecksum() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-zstd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let made = try await Tool.shell(
            """
            cd '\(dir.path)' && head -c 3000000 /dev/urandom > data && zstd -q -3 -o data.zst data \
            && cat data | zstd -q -3 --long=28 > long.zst && (cat data.zst; echo junk) > junk.zst
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let data = try Data(contentsOf: dir.appendingPathComponent("data"))

        let cat = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" cat zstd:data.zst | sha256sum")
        #expect(cat.status == 0, "\(cat.stderr)")
        #expect(cat.text.hasPrefix(Tool.sha256(data)), "\(cat.text)")
        let sum = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" checksum --offset 1000000 zstd:data.zst")
        #expect(sum.text.hasPrefix(Tool.sha256(data.dropFirst(1_000_000))), "\(sum.text) \(sum.stderr)")

        let refused = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" cat zstd:long.zst > /dev/null")
        #expect(refused.status == 1)
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("long.zst") && refused.stderr.contains("--long=28"), "\(refused.stderr)")
        let allowed = try await Tool.shell(
            "cd '\(dir.path)' && \"$BLOBSTREAM\" cat --long 28 zstd:long.zst | sha256sum")
        #expect(allowed.status == 0 && allowed.text.hasPrefix(Tool.sha256(data)), "\(allowed.stderr)")
        let usage = try await Tool.blobstream(["cat", "--long", "40", "zstd:x.zst"])
        #expect(usage.status == 2 && usage.stderr.contains("--long"), "\(usage.stderr)")

        let junk = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" cat zstd:junk.zst > /dev/null")
        #expect(junk.status == 1)
        let frames = try Data(contentsOf: dir.appendingPathComponent("data.zst"))
        #expect(
            junk.stderr.contains("junk.zst") && junk.stderr.contains("compressed offset \(frames.count)"),
            "\(junk.stderr)")
    }
}
