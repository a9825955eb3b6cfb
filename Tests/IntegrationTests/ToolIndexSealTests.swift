import Foundation
import Testing

/// `BLOBSTREAM_INDEX_KEY`: `index` seals what it writes with the key; `cat` with the key uses
/// only an index sealed with it (one sealed with another key, or none, is ignored and said so
/// with `--verbose`); without the key a sealed index is used as before; a value that is no
/// key is a usage error (status 2) for every command.
@Suite("The blobstream tool: indexes sealed with BLOBSTREAM_INDEX_KEY")
struct ToolIndexSealTests {
    static let key = String(repeating: "3c", count: 32)
    static let otherKey = Data(repeating: 0xC3, count: 32).base64EncodedString()

    func blobstream(_ arguments: [String], key: String?) async throws -> Tool.Result {
        let binary = Tool.binDirectory.appendingPathComponent("blobstream").path
        var environment: [String: String] = [:]
        if let key { environment["BLOBSTREAM_INDEX_KEY"] = key }
        return try await Tool.run(binary, arguments, environment: environment)
    }

    @Test("index with the key writes a sealed index; cat with the key uses it; another key's is not used")
    func sealedGzipIndex() async throws {
        let folder = try ToolIndexUseTests.Folder()
        let data = folder.path("data")
        let gz = folder.path("data.gz")
        let made = try await Tool.shell("set -e; seq 1 600000 > \(data); gzip -c \(data) > \(gz)")
        try #require(made.status == 0, "\(made.stderr)")
        let plain = try Data(contentsOf: URL(fileURLWithPath: data))

        let indexed = try await blobstream(["index", "--spacing", "262144", gz], key: Self.key)
        try #require(indexed.status == 0, "\(indexed.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: gz + ".gzidx"))
        #expect(bytes.suffix(41).prefix(9) == Data("BSIDXMAC".utf8) + [1], "sealed")

        let keyed = try await blobstream(["cat", "--verbose", "gzip:" + gz], key: Self.key)
        #expect(keyed.status == 0, "\(keyed.stderr)")
        #expect(Tool.sha256(keyed.stdout) == Tool.sha256(plain))
        #expect(keyed.stderr.contains("read through a seek-point index"), "\(keyed.stderr)")
        // No key: the seal is set aside, the index used as before.
        let unkeyed = try await blobstream(["cat", "--verbose", "gzip:" + gz], key: nil)
        #expect(unkeyed.status == 0 && unkeyed.stderr.contains("read through a seek-point index"), "\(unkeyed.stderr)")
        // Another key: not used (the same bytes, inflated from the start), and said why.
        let other = try await blobstream(["cat", "--verbose", "gzip:" + gz], key: Self.otherKey)
        #expect(other.status == 0, "\(other.stderr)")
        #expect(Tool.sha256(other.stdout) == Tool.sha256(plain))
        #expect(other.stderr.contains("no seek-point index"), "\(other.stderr)")
        #expect(other.stderr.contains("does not verify"), "\(other.stderr)")
        // Named with another key: refused.
        let named = try await blobstream(["cat", "--index", gz + ".gzidx", "gzip:" + gz], key: Self.otherKey)
        #expect(named.status == 1 && named.stderr.contains("does not verify"), "\(named.stderr)")

        // An index written without a key is not used with one.
        let rewritten = try await blobstream(["index", "--spacing", "262144", "--output", gz + ".gzidx", gz], key: nil)
        try #require(rewritten.status == 0, "\(rewritten.stderr)")
        let unsealed = try await blobstream(["cat", "--verbose", "gzip:" + gz], key: Self.key)
        #expect(unsealed.status == 0 && unsealed.stderr.contains("not sealed"), "\(unsealed.stderr)")
    }

    @Test("a key that is no key (too short, not hex nor base64) is a usage error, status 2, naming the variable")
    func badKey() async throws {
        for bad in ["abcd", "not a key at all!", ""] {
            let run = try await blobstream(["cat", "/dev/null"], key: bad)
            #expect(run.status == 2, "\(bad): \(run.stderr)")
            #expect(run.stderr.contains("BLOBSTREAM_INDEX_KEY") && !run.stderr.contains(bad.isEmpty ? "\u{0}" : bad))
            #expect(run.stdout.isEmpty)
        }
    }
}
