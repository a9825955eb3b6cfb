import Foundation
import Testing

/// `checksum --check` over a long list: every line checked, the same report as
/// `sha256sum -c`, and no crash or hang however many lines the list holds.
@Suite("checksum --check: a list of 60,000 lines")
struct ChecksumCheckScaleTests {
    @Test("60,000 lines naming a few small files: status 0 and sha256sum -c's report, in bounded time")
    func longList() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-longsums-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let names = ["a.txt", "b.bin", "name with space"]
        for (i, name) in names.enumerated() {
            try Data("file \(i)\n".utf8 + Data(repeating: UInt8(i), count: 100 * i)).write(
                to: dir.appendingPathComponent(name))
        }
        let sums = await BoundedRun.run("/usr/bin/sha256sum", names, workingDirectory: dir.path)
        try #require(sums.status == 0, "\(sums.stderrText)")
        let lines = sums.stdout.split(separator: UInt8(ascii: "\n"))
        var list = Data()
        for i in 0..<60_000 { list += lines[i % lines.count] + [UInt8(ascii: "\n")] }
        try list.write(to: dir.appendingPathComponent("SUMS"))

        // The limit guards against the crash and the hang (a list this long used to take
        // minutes, then crashed), not a timing: the debug build takes ~20 s on a busy
        // machine, and ThreadSanitizer several times that.
        let tool = Tool.binDirectory.appendingPathComponent("blobstream").path
        let ours = await BoundedRun.run(tool, ["checksum", "--check", "SUMS"], limit: 240, workingDirectory: dir.path)
        #expect(!ours.timedOut, "killed after \(ours.seconds) s")
        #expect(ours.status == 0, "status \(ours.status): \(ours.stderrText.prefix(500))")
        #expect(ours.stderr.isEmpty, "\(ours.stderrText.prefix(500))")
        let gnu = await BoundedRun.run("/usr/bin/sha256sum", ["-c", "SUMS"], limit: 60, workingDirectory: dir.path)
        #expect(gnu.status == 0)
        #expect(
            ours.stdout.count == gnu.stdout.count && ours.stdout == gnu.stdout, "the report differs from sha256sum -c")
        #expect(ours.stdout.split(separator: UInt8(ascii: "\n")).count == 60_000)
    }
}
