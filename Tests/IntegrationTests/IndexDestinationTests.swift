import Foundation
import Glibc
import Testing

/// Where `blobstream index` may write: a new path or a regular file that is not its input,
/// through a temporary file renamed over it. Every other destination (the input through any
/// link, a FIFO, a device, a directory), given with `--output` or found at the default
/// sidecar path, is a usage error (status 2) that leaves the input and the destination as
/// they were.
@Suite("index: writes only a new path or a regular file that is not its input")
struct IndexDestinationTests {
    /// A folder holding `data.gz` (1 MiB of text and pseudo-random bytes, gzip'd), `a.tar`
    /// and `a.tar.gz`.
    final class Folder {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-dest-\(UUID())").path
        init() async throws {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            var generator = SystemRandomNumberGenerator()
            var payload = Data((1...60_000).map { "line \($0)\n" }.joined().utf8)
            payload += Data((0..<400_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
            try payload.write(to: URL(fileURLWithPath: self["data"]))
            var tar = TarWriter()
            tar.add(name: Array("member.txt".utf8), content: Data("member bytes\n".utf8))
            tar.add(name: Array("big.bin".utf8), content: payload.prefix(300_000))
            try tar.archive.write(to: URL(fileURLWithPath: self["a.tar"]))
            let made = await BoundedRun.run(
                "/bin/sh", ["-c", "gzip -c data > data.gz && gzip -c a.tar > a.tar.gz"], workingDirectory: path)
            #expect(made.status == 0, "\(made.stderrText)")
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        subscript(name: String) -> String { path + "/" + name }
    }

    static var tool: String { Tool.binDirectory.appendingPathComponent("blobstream").path }

    /// `lstat`: what is at a path itself (a link is not followed), or nil.
    static func entry(_ path: String) -> stat? {
        var info = stat()
        return lstat(path, &info) == 0 ? info : nil
    }

    static func sha256(_ path: String) throws -> String {
        Tool.sha256(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// A destination the tool must refuse: how to make it in the folder, the arguments, the
    /// path the error line names and what it says about it.
    struct Row: CustomStringConvertible, Sendable {
        var description: String
        /// A shell command run in the folder before the tool (makes the destination).
        var setup: String
        /// The input, relative to the folder.
        var input: String
        /// `--output` (relative to the folder), or nil for the default sidecar.
        var output: String?
        /// The path that must be refused.
        var refused: String
        /// What the error line says about it (case-insensitive).
        var why: String

        init(
            _ description: String, _ setup: String, _ input: String, _ output: String?, _ refused: String,
            _ why: String
        ) {
            (self.description, self.setup, self.input, self.output, self.refused, self.why) =
                (description, setup, input, output, refused, why)
        }
    }

    static let rows: [Row] = [
        Row("the input itself", ":", "data.gz", "data.gz", "data.gz", "is the input"),
        Row("a hard link to the input", "ln data.gz hard.gz", "data.gz", "hard.gz", "hard.gz", "is the input"),
        Row("a symbolic link to the input", "ln -s data.gz link.gz", "data.gz", "link.gz", "link.gz", "is the input"),
        Row("a FIFO", "mkfifo fifo", "data.gz", "fifo", "fifo", "a FIFO"),
        Row("a symbolic link to a FIFO", "mkfifo f && ln -s f f-link", "data.gz", "f-link", "f-link", "a FIFO"),
        Row("a character device node", "mknod null c 1 3", "data.gz", "null", "null", "a character device"),
        Row("a directory", "mkdir dir", "data.gz", "dir", "dir", "a directory"),
        Row(
            "the default sidecar, a symbolic link to the input", "ln -s data.gz data.gz.gzidx", "data.gz", nil,
            "data.gz.gzidx", "is the input"),
        Row("the default sidecar, a FIFO", "mkfifo data.gz.gzidx", "data.gz", nil, "data.gz.gzidx", "a FIFO"),
        Row(
            "an archive's default index, a hard link to the archive", "ln a.tar a.tar.blobidx", "a.tar", nil,
            "a.tar.blobidx", "is the input"),
        Row(
            "a tar.gz's second sidecar (seek points), a FIFO", "mkfifo a.tar.gz.gzidx", "a.tar.gz", nil,
            "a.tar.gz.gzidx", "a FIFO"),
    ]

    @Test(
        "refused with status 2 and one line naming the path; the input and the destination unchanged", arguments: rows)
    func refused(row: Row) async throws {
        let folder = try await Folder()
        var setup = await BoundedRun.run("/bin/sh", ["-c", row.setup], workingDirectory: folder.path)
        var prefix: [String] = []
        var refused = folder[row.refused]
        if setup.status != 0 && row.setup.hasPrefix("mknod") {
            // No device nodes may be made here: the same check on a symbolic link to the
            // system's /dev/null, with the tool run as an unprivileged user (which could not
            // replace /dev/null even if it tried).
            setup = await BoundedRun.run("/bin/ln", ["-s", "/dev/null", refused])
            if getuid() == 0 { prefix = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] }
        }
        try #require(setup.status == 0, "\(setup.stderrText)")
        refused = folder[row.refused]
        let inputHash = try Self.sha256(folder[row.input])
        let before = try #require(Self.entry(refused))
        let listing = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()

        let output = row.output.map { ["--output", folder[$0]] } ?? []
        let r = await BoundedRun.run(Self.tool, ["index"] + output + [folder[row.input]], limit: 60, prefix: prefix)

        #expect(!r.timedOut, "hung")
        #expect(r.status == 2, "status \(r.status): \(r.stderrText)")
        #expect(r.stdout.isEmpty)
        let line = r.stderrText
        #expect(line.hasPrefix("blobstream: ") && line.filter { $0 == "\n" }.count == 1, "not one line: \(line)")
        #expect(line.contains("'\(refused)'"), "does not name \(refused): \(line)")
        #expect(line.localizedCaseInsensitiveContains(row.why), "does not say '\(row.why)': \(line)")
        #expect(try Self.sha256(folder[row.input]) == inputHash, "the input changed")
        let after = try #require(Self.entry(refused), "\(refused) is gone")
        #expect(after.st_ino == before.st_ino && after.st_mode == before.st_mode, "\(refused) was replaced")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == listing)
        var null = stat()
        #expect(stat("/dev/null", &null) == 0 && null.st_mode & S_IFMT == S_IFCHR, "/dev/null is no longer a device")
    }

    @Test("a new path, an existing regular file, a symbolic link to one: written whole, as the default sidecar is")
    func allowed() async throws {
        let folder = try await Folder()
        let reference = await BoundedRun.run(Self.tool, ["index", "--spacing", "65536", folder["data.gz"]], limit: 60)
        #expect(reference.status == 0, "\(reference.stderrText)")
        let expected = try Self.sha256(folder["data.gz.gzidx"])

        let new = await BoundedRun.run(
            Self.tool, ["index", "--spacing", "65536", "--output", folder["new.idx"], folder["data.gz"]], limit: 60)
        #expect(new.status == 0, "\(new.stderrText)")
        #expect(String(decoding: new.stdout, as: UTF8.self).hasPrefix(folder["new.idx"] + "\t"))
        #expect(try Self.sha256(folder["new.idx"]) == expected)

        try Data("an old index\n".utf8).write(to: URL(fileURLWithPath: folder["old.idx"]))
        let made = await BoundedRun.run(
            "/bin/sh", ["-c", "seq 1 1000000 | gzip -c > big.gz"], workingDirectory: folder.path)
        #expect(made.status == 0, "\(made.stderrText)")
        #expect(chmod(folder["old.idx"], 0o640) == 0)
        let over = await BoundedRun.run(
            Self.tool, ["index", "--spacing", "65536", "--output", folder["old.idx"], folder["data.gz"]], limit: 60)
        #expect(over.status == 0, "\(over.stderrText)")
        #expect(try Self.sha256(folder["old.idx"]) == expected)
        #expect(Self.entry(folder["old.idx"]).map { $0.st_mode & 0o777 } == 0o640, "its mode was not kept")

        try Data("the link's target\n".utf8).write(to: URL(fileURLWithPath: folder["target.idx"]))
        #expect(symlink("target.idx", folder["link.idx"]) == 0)
        let link = await BoundedRun.run(
            Self.tool, ["index", "--spacing", "65536", "--output", folder["link.idx"], folder["data.gz"]], limit: 60)
        #expect(link.status == 0, "\(link.stderrText)")
        #expect(try Self.sha256(folder["target.idx"]) == expected)
        #expect(Self.entry(folder["link.idx"]).map { $0.st_mode & S_IFMT } == S_IFLNK, "the link was replaced")

        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!names.contains { $0.contains(".blobstream-") }, "a temporary file was left: \(names)")
    }

    @Test("a run killed before its rename, or whose write fails partway, leaves the destination as it was")
    func interrupted() async throws {
        let folder = try await Folder()
        try Data("an old index\n".utf8).write(to: URL(fileURLWithPath: folder["old.idx"]))
        let made = await BoundedRun.run(
            "/bin/sh", ["-c", "seq 1 1000000 | gzip -c > big.gz"], workingDirectory: folder.path)
        #expect(made.status == 0, "\(made.stderrText)")
        func unchanged(_ destination: String) async throws -> Bool {
            destination == "old.idx"
                ? try String(contentsOfFile: folder["old.idx"], encoding: .utf8) == "an old index\n"
                : Self.entry(folder[destination]) == nil
        }
        for destination in ["old.idx", "fresh.idx"] {
            // 6.9 MB of text: a seek point with its 32 KiB window every 32 KiB, an index of about 7 MiB.
            let index = [Self.tool, "index", "--spacing", "32768", "--output", destination, "big.gz"]
            // Killed (SIGKILL, injected by strace) at the rename, the index written whole
            // beside the destination: the destination is as it was.
            let killed = await BoundedRun.run(
                "/usr/bin/strace",
                ["-f", "-o", "/dev/null", "-e", "trace=\(Self.renames)", "-e", "inject=\(Self.renames):signal=KILL"]
                    + index, limit: 60, workingDirectory: folder.path)
            #expect(killed.status == 128 + SIGKILL, "not killed at the rename: \(killed.stderrText)")
            #expect(try await unchanged(destination), "\(destination) changed")
            // A write cut short by a file-size limit of 1 MiB (the index is about 7 MiB):
            // status 1 naming the destination, which is as it was, and no temporary file left.
            // SIGXFSZ is ignored (as the tool's threads leave it) so that the write fails with
            // EFBIG. (Under ThreadSanitizer a limit below about 1 MiB kills the runtime itself
            // with SIGBUS, before the tool writes anything.)
            let before = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            let limited = await BoundedRun.run(
                "/bin/bash", ["-c", "trap '' XFSZ; ulimit -f 1024; exec \"$@\"", "bash"] + index, limit: 60,
                workingDirectory: folder.path)
            #expect(limited.status == 1, "\(limited.stderrText)")
            #expect(limited.stderrText.contains("'\(destination)'"), "\(limited.stderrText)")
            #expect(try await unchanged(destination), "\(destination) changed")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == before)
        }
    }

    /// The system calls a rename is made with.
    static let renames = "rename,renameat,renameat2"
}
