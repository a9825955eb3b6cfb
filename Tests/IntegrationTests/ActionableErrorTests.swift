import Foundation
import Testing

/// Failures a user can act on: each bad invocation ends with the documented status (1 the
/// work failed, 2 a usage error), one line on stderr that says what and where, and what to
/// do where there is something to do; `--help` documents the statuses.
@Suite("Errors: what, where, and what to do")
struct ActionableErrorTests {
    struct Row: CustomStringConvertible, Sendable {
        var arguments: [String]
        var status: Int32
        /// What the line must say (case-sensitive).
        var needles: [String]
        /// `env` arguments before the tool (`-u NAME`, `NAME=VALUE`).
        var environment: [String] = []
        var description: String { "blobstream " + arguments.joined(separator: " ") }
    }

    /// A folder with `photos.tar` (members `DCIM/IMG_0001.JPG`, `DCIM/IMG_0002.JPG`,
    /// `notes.txt`), `x.gz`, and an empty `home/` (no AWS files).
    static func makeFolder() async throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "blobstream-errors-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var tar = TarWriter()
        tar.add(name: Array("DCIM/IMG_0001.JPG".utf8), content: Data("one".utf8))
        tar.add(name: Array("DCIM/IMG_0002.JPG".utf8), content: Data("two".utf8))
        tar.add(name: Array("notes.txt".utf8), content: Data("notes".utf8))
        try tar.archive.write(to: dir.appendingPathComponent("photos.tar"))
        let r = await BoundedRun.run(
            "/bin/sh", ["-c", "cd '\(dir.path)' && printf 'x\\n' | gzip > x.gz && mkdir home"])
        #expect(r.status == 0)
        return dir
    }

    static func rows(_ d: String) -> [Row] {
        // `env` arguments: no AWS variables, a HOME without ~/.aws.
        let noAWS =
            ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"].flatMap { ["-u", $0] }
            + ["HOME=\(d)/home", "AWS_SHARED_CREDENTIALS_FILE=\(d)/home/none", "AWS_CONFIG_FILE=\(d)/home/none"]
        return [
            // Missing things: named, with the path as given.
            Row(arguments: ["cat", "missing.jpg"], status: 1, needles: ["missing.jpg", "no such file"]),
            Row(
                arguments: ["checksum", "gzip:missing.gz"], status: 1,
                needles: ["no file 'missing.gz'", "current folder"]),
            // A member that is not there: the close names, and how to list them all.
            Row(
                arguments: ["cat", "photos.tar!/DCIM/IMG_001.JPG"], status: 1,
                needles: ["DCIM/IMG_001.JPG", "no such member", "did you mean 'DCIM/IMG_0001.JPG'", "blobstream ls"]),
            Row(
                arguments: ["cat", "photos.tar!/img_0002.jpg"], status: 1,
                needles: ["did you mean 'DCIM/IMG_0002.JPG'", "blobstream ls"]),
            Row(arguments: ["cat", "archive:photos.tar!/NOTES.TXT"], status: 1, needles: ["'notes.txt'"]),
            Row(arguments: ["cat", "photos.tar!/ntoes.txt"], status: 1, needles: ["did you mean 'notes.txt'"]),
            Row(
                arguments: ["cat", "photos.tar!/zzzzzzzz"], status: 1,
                needles: ["no such member", "'blobstream ls photos.tar' lists the members"]),
            // URLs: the scheme, the shape.
            Row(
                arguments: ["cat", "nope://x"], status: 1,
                needles: ["unknown URL scheme 'nope'", "registered:", "file"]),
            Row(arguments: ["cat", "file://host/x"], status: 1, needles: ["names a host", "file:///path"]),
            Row(arguments: ["cat", "archive:photos.tar"], status: 1, needles: ["!/"]),
            // Offsets: where.
            Row(arguments: ["cat", "--offset", "99", "x.gz"], status: 1, needles: ["99"]),
            // S3 without credentials: where it looked and what to set.
            Row(
                arguments: ["cat", "s3://bucket/key"], status: 1,
                needles: ["no S3 credentials", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"], environment: noAWS),
            // checksum --check of something that is not a list: which form was expected.
            Row(
                arguments: ["checksum", "--check", "x.gz"], status: 1,
                needles: ["x.gz", "no properly formatted", "64 hex digits", "sha256sum"]),
            // Usage errors: status 2 and where help is.
            Row(arguments: ["frobnicate"], status: 2, needles: ["frobnicate", "blobstream --help"]),
            Row(arguments: [], status: 2, needles: ["name a command", "--help"]),
            Row(
                arguments: ["cat", "--lenght", "3", "x.gz"], status: 2, needles: ["--lenght", "blobstream cat --help"]),
            Row(arguments: ["cat", "--length", "-3", "x.gz"], status: 2, needles: ["--length", "0 or more"]),
            Row(arguments: ["cat", "--length"], status: 2, needles: ["--length"]),
            Row(arguments: ["checksum", "-a", "sha3", "x.gz"], status: 2, needles: ["sha3", "sha256"]),
            Row(arguments: ["ls", "-l", "--json", "photos.tar"], status: 2, needles: ["-l", "--json"]),
            Row(arguments: ["ls"], status: 2, needles: ["name an archive"]),
        ]
    }

    @Test("each bad invocation: its status, one line on stderr with the key words, nothing on stdout")
    func table() async throws {
        let dir = try await Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tool = Tool.binDirectory.appendingPathComponent("blobstream").path
        for row in Self.rows(dir.path) {
            let r = await BoundedRun.run(
                "/usr/bin/env", row.environment + [tool] + row.arguments, limit: 30, workingDirectory: dir.path)
            let text = r.stderrText
            #expect(r.status == row.status, "\(row): status \(r.status); \(text)")
            #expect(r.stdout.isEmpty, "\(row)")
            #expect(text.hasPrefix("blobstream: ") && text.filter { $0 == "\n" }.count == 1, "\(row): \(text)")
            for needle in row.needles {
                #expect(text.localizedCaseInsensitiveContains(needle), "\(row): does not say '\(needle)': \(text)")
            }
        }
    }

    @Test("--help documents the exit statuses")
    func helpSaysStatuses() async throws {
        let help = try await Tool.blobstream(["--help"])
        #expect(help.status == 0)
        for words in ["Exit status", "0 on success", "1 when the work failed", "2 for a usage error"] {
            #expect(help.text.contains(words), "\(words)")
        }
    }
}
