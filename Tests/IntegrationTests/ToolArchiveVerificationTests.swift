import Foundation
import Testing

/// `blobstream cat` and `checksum` of a member of a garbled .tar.xz: the xz block check that
/// covers the member comes after its last byte, so only reading on finds it.
@Suite("The blobstream tool: archive members are verified to the end of the archive")
struct ToolArchiveVerificationTests {
    /// Deterministic bytes that LZMA2 stores as they are (SplitMix64).
    static func randomBytes(_ count: Int, seed: UInt64) -> Data {
        var state = seed
        var out = Data(capacity: count)
        while out.count < count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            withUnsafeBytes(of: z.littleEndian) { out.append(contentsOf: $0.prefix(count - out.count)) }
        }
        return out
    }

    @Test("a member of a garbled .tar.xz fails cat and checksum; --skip-archive-verification does not verify")
    func garbledXZ() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "blobstream-verify-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let tree = folder.appendingPathComponent("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        let first = Self.randomBytes(600_000, seed: 51)
        try first.write(to: tree.appendingPathComponent("first.bin"))
        // Compressible text after it keeps the xz block going long after first.bin's end.
        try Data(String(repeating: "archive member block offset\n", count: 90_000).utf8).write(
            to: tree.appendingPathComponent("second.txt"))
        let archive = folder.appendingPathComponent("a.tar.xz").path
        let made = try await Tool.run("/usr/bin/bsdtar", ["-cJf", archive, "-C", tree.path, "first.bin", "second.txt"])
        #expect(made.status == 0, "\(made.stderr)")
        var data = try Data(contentsOf: URL(fileURLWithPath: archive))
        data[300_000] ^= 0x10 // inside first.bin's bytes (stored as LZMA2 uncompressed chunks)
        try data.write(to: URL(fileURLWithPath: archive))

        let cat = try await Tool.blobstream(["cat", archive + "!/first.bin"])
        #expect(cat.status == 1, "cat ended with \(cat.status), \(cat.stdout.count) bytes")
        #expect(cat.stderr.contains("a.tar.xz") && cat.stderr.contains("first.bin"), "\(cat.stderr)")
        let checksum = try await Tool.blobstream(["checksum", archive + "!/first.bin"])
        #expect(
            checksum.status == 1 && checksum.stdout.isEmpty, "checksum ended with \(checksum.status): \(checksum.text)")

        // The fast mode says it does not verify, and indeed does not: wrong bytes, exit 0.
        let fast = try await Tool.blobstream(["cat", "--skip-archive-verification", archive + "!/first.bin"])
        #expect(
            fast.status == 0 && fast.stdout.count == first.count && fast.stdout != first,
            "fast cat ended with \(fast.status)")
    }
}
