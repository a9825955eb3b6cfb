import Foundation
import Testing

/// A stderr that cannot be written (closed, or a pipe whose reader is gone) costs the lines
/// meant for it, never the run: each command ends with its own exit status (an error 1, a
/// usage error 2, a good read 0 with its bytes on stdout), as with a stderr that works.
@Suite("The blobstream tool: stderr closed or its reader gone")
struct StderrGoneTests {
    final class Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-stderr-gone-\(UUID())")
        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: url) }
        func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    }

    struct Row {
        var name: String
        var arguments: [String]
        var status: Int32
        /// What stdout must hold (a good read's bytes), nil when not checked.
        var stdout: Data?
    }

    @Test("{error 1, usage error 2, good read with --verbose 0} x {stderr closed, reader gone}: the normal status")
    func table() async throws {
        let folder = try Folder()
        let data = folder.path("data")
        let gz = folder.path("data.gz")
        let made = try await Tool.shell("set -e; seq 1 200000 > \(data); gzip -c \(data) > \(gz)")
        try #require(made.status == 0, "\(made.stderr)")
        let plain = try Data(contentsOf: URL(fileURLWithPath: data))
        let tool = Tool.binDirectory.appendingPathComponent("blobstream").path
        let rows = [
            Row(name: "error", arguments: ["cat", folder.path("missing.bin")], status: 1, stdout: Data()),
            Row(name: "usage error", arguments: ["cat", "--no-such-option", data], status: 2, stdout: Data()),
            Row(name: "good read, --verbose", arguments: ["cat", "--verbose", "gzip:" + gz], status: 0, stdout: plain),
        ]
        for row in rows {
            // With a stderr that works, each row does write a line there.
            let told = await BoundedRun.run(tool, row.arguments)
            #expect(told.status == row.status, "\(row.name): \(told.stderrText)")
            #expect(told.stderrText.hasPrefix("blobstream: "), "\(row.name): \(told.stderrText)")
            for use in [BoundedRun.Stderr.closed, .readerGone] {
                let r = await BoundedRun.run(tool, row.arguments, stderr: use)
                #expect(!r.timedOut, "\(row.name), stderr \(use)")
                #expect(r.status == row.status, "\(row.name), stderr \(use): exit \(r.status)")
                if let stdout = row.stdout {
                    #expect(Tool.sha256(r.stdout) == Tool.sha256(stdout), "\(row.name), stderr \(use)")
                }
            }
        }
    }
}
