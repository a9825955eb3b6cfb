import Foundation
import Glibc
import NginxTestServer
import Testing

/// More than a hundred bad inputs for the reading commands: each must end with the README's
/// exit status (1 when the work failed, 2 for a usage error), exactly one line on stderr
/// naming what was wrong, nothing on stdout, and in bounded time (a hang is killed and fails).
@Suite("Bad inputs: one clear line, the right status, never a crash or a hang")
struct BadInputTableTests {
    struct Row: CustomStringConvertible, Sendable {
        var arguments: [String]
        /// 1 (the work failed) or 2 (usage error).
        var status: Int32
        /// What the line must say (case-insensitive), beside naming the input.
        var needles: [String]
        /// Runs as an unprivileged user (for permission checks when the tests run as root).
        var unprivileged = false
        var description: String { "blobstream " + arguments.map { "'\($0)'" }.joined(separator: " ") }
    }

    /// A folder of inputs: regular files, archives, a directory, symlink loops, a FIFO no
    /// one writes to, an unreadable file.
    static func makeInputs() async throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-bad-\(UUID().uuidString)")
            .path
        let fm = FileManager.default
        try fm.createDirectory(atPath: dir + "/dir", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: dir + "/library", withIntermediateDirectories: true)
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: dir + "/file.txt"))
        try Data().write(to: URL(fileURLWithPath: dir + "/empty"))
        try Data("this is plain text, not an archive, not gzip\n".utf8).write(
            to: URL(fileURLWithPath: dir + "/text.txt"))
        var tar = TarWriter()
        tar.add(name: Array("member.txt".utf8), content: Data("member bytes\n".utf8))
        tar.add(name: Array("sub".utf8), kind: .directory)
        tar.add(name: Array("link".utf8), kind: .symlink, linkTarget: "member.txt")
        tar.add(name: Array("big.bin".utf8), content: Data(repeating: 7, count: 5000))
        try tar.archive.write(to: URL(fileURLWithPath: dir + "/a.tar"))
        try tar.archive.prefix(1200).write(to: URL(fileURLWithPath: dir + "/truncated.tar"))
        var gz = await BoundedRun.run(
            "/bin/sh",
            ["-c", "gzip -c '\(dir)/a.tar' > '\(dir)/a.tar.gz' && gzip -c '\(dir)/file.txt' > '\(dir)/file.gz'"])
        #expect(gz.status == 0)
        let whole = try Data(contentsOf: URL(fileURLWithPath: dir + "/a.tar.gz"))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: dir + "/truncated.tar.gz"))
        gz = await BoundedRun.run(
            "/bin/sh",
            [
                "-c",
                "cd '\(dir)' && ln -s loop2 loop1 && ln -s loop1 loop2 && ln -s self self && mkfifo fifo && cp file.txt unreadable.txt && chmod 000 unreadable.txt",
            ])
        #expect(gz.status == 0)
        return dir
    }

    /// The table, over the inputs in `d`.
    static func rows(_ d: String) -> [Row] {
        let tar = "\(d)/a.tar"
        let file = "\(d)/file.txt"
        let text = "\(d)/text.txt"
        var rows: [Row] = []
        func add(_ arguments: [String], _ status: Int32, _ needles: String...) {
            rows.append(Row(arguments: arguments, status: status, needles: needles))
        }
        // Malformed percent-escapes, in every scheme and in the PATH!/member form.
        for escape in ["%", "%G1", "%0", "%4", "%%41", "%zz", "%-1", "%\u{0301}1"] {
            add(["cat", "file://\(d)/x\(escape)"], 1, "percent-escape")
            add(["cat", "archive:file://\(tar)!/m\(escape)"], 1, "percent-escape")
        }
        add(["cat", "gzip:file://\(d)/x%G1"], 1, "percent-escape")
        add(["cat", "\(tar)!/%"], 1, "percent-escape")
        add(["cat", "\(tar)!/a%G"], 1, "percent-escape")
        add(["checksum", "file:///%"], 1, "percent-escape")
        add(["info", "file:///x%0"], 1, "percent-escape")
        add(["ls", "file://\(d)/a%2.tar"], 1, "percent-escape")
        // A NUL in any decoded part.
        add(["cat", "file:///etc/hostname%00.jpg"], 1, "NUL")
        add(["cat", "file://\(file)%00"], 1, "NUL")
        add(["cat", "file:///%00"], 1, "NUL")
        add(["cat", "gzip:file://\(d)/file.gz%00.txt"], 1, "NUL")
        add(["cat", "archive:file://\(tar)%00!/member.txt"], 1, "NUL")
        add(["cat", "archive:file://\(tar)!/member.txt%00"], 1, "NUL")
        add(["cat", "archive:file://\(tar)!/%00"], 1, "NUL")
        add(["cat", "\(tar)!/member.txt%00.jpg"], 1, "NUL")
        add(["checksum", "\(tar)!/%00member.txt"], 1, "NUL")
        add(["ls", "file://\(tar)%00"], 1, "NUL")
        add(["info", "file://\(file)%00"], 1, "NUL")
        add(["cat", "--library", "\(d)/library", "assets-library://asset/asset.JPG?id=a%00b&ext=JPG"], 1, "NUL")
        add(["cat", "--library", "\(d)/library", "assets-library://asset/asset.JPG?id=1&ext=JP%00G"], 1, "NUL")
        // file: URLs of the wrong shape, unknown schemes, empty strings.
        add(["cat", "file://host/etc/hostname"], 1, "host")
        add(["cat", "file:relative/path"], 1, "relative")
        add(["cat", "file:"], 1, "relative")
        add(["cat", "file://"], 1, "file:")
        add(["cat", "file:///x%C3"], 1, "UTF-8")
        add(["cat", "foo:bar"], 1, "unknown URL scheme 'foo'")
        // http(s) is read by ranged GETs now: nothing listens on port 1.
        add(["cat", "http://127.0.0.1:1/x"], 1, "http://127.0.0.1:1/x", "connection refused")
        add(["cat", "https://"], 1, "https://", "not an http:// or https:// URL with a host")
        // s3:// is read by signed ranged GETs now: nothing listens on port 1 (or, without
        // credentials, none are found); either way the line names the object.
        add(["cat", "--endpoint-url", "http://127.0.0.1:1", "s3://bucket/key"], 1, "s3://bucket/key")
        add(["cat", "s3://bucket"], 1, "s3://bucket", "no bucket or no key")
        add(["cat", "gzip:nope:x"], 1, "unknown URL scheme 'nope'")
        add(["cat", "archive:nope:x!/m"], 1, "unknown URL scheme 'nope'")
        add(["info", "zz+top.1:x"], 1, "unknown URL scheme")
        add(["cat", "gzip:"], 1, "no inner URL")
        add(["cat", "gzip:gzip:"], 1, "no inner URL")
        add(["cat", "gzip:/no/scheme"], 1, "no scheme")
        add(["cat", ""], 1, "empty SOURCE")
        add(["checksum", ""], 1, "empty")
        add(["info", ""], 1, "empty")
        add(["ls", ""], 1, "empty")
        add(["cat", "--", ""], 1, "empty")
        // archive: URLs of the wrong shape.
        add(["cat", "archive:"], 1, "no '!/'")
        add(["cat", "archive:file://\(tar)"], 1, "no '!/'")
        add(["cat", "archive:!/member.txt"], 1, "names no archive")
        add(["cat", "archive:file://\(tar)!/"], 1, "names no member")
        add(["cat", "\(tar)!/"], 1, "names no member")
        add(["cat", "archive:archive:file://\(tar)!/member.txt!/x"], 1, "not an archive")
        // Members: missing, `..`, absolute, with control bytes, not files.
        for member in [
            "missing.txt", "..", "../../etc/passwd", "/etc/passwd", "//member.txt", "member.txt/..", "%0Amember.txt",
            "member.txt%0A", "%1B[31mmember", "MEMBER.TXT", "member.tx", "sub/member.txt", "%09",
        ] {
            add(["cat", "\(tar)!/\(member)"], 1, "no such member")
        }
        add(["cat", "\(tar)!/."], 1, "names nothing")
        add(["cat", "\(tar)!/./"], 1, "names nothing")
        add(["cat", "archive:file://\(tar)!/nothing-here"], 1, "no such member", "nothing-here")
        add(["cat", "archive:gzip:file://\(d)/a.tar.gz!/missing"], 1, "no such member")
        add(["cat", "\(tar)!/sub"], 1, "directory")
        add(["cat", "\(tar)!/link"], 1, "symbolic link")
        add(["checksum", "\(tar)!/sub/"], 1, "directory")
        // Archives and gzip streams that are not, or are cut short.
        add(["cat", "\(text)!/x"], 1, "not an archive")
        add(["cat", "\(d)/empty!/x"], 1, "no such member")
        add(["cat", "\(d)/dir!/x"], 1, "directory")
        add(["cat", "\(d)/missing.tar!/x"], 1, "no such file")
        add(["cat", "\(d)/truncated.tar!/big.bin"], 1, "truncated")
        add(["cat", "archive:gzip:file://\(d)/truncated.tar.gz!/big.bin"], 1, "truncated")
        add(["cat", "gzip:file://\(text)"], 1, "gzip")
        add(["cat", "gzip:file://\(tar)"], 1, "gzip")
        add(["cat", "gzip:file://\(d)/empty"], 1, "gzip")
        add(["cat", "gzip:file://\(d)/dir"], 1, "directory")
        add(["cat", "gzip:file://\(d)/truncated.tar.gz"], 1, "truncated")
        add(["cat", "archive:gzip:file://\(text)!/x"], 1, "gzip")
        add(["ls", text], 1, "not an archive")
        add(["ls", "gzip:file://\(text)"], 1, "gzip")
        add(["ls", "\(d)/truncated.tar"], 1, "truncated")
        add(["ls", "\(tar)!/member.txt"], 1, "not an archive")
        // Paths: missing, directories, loops, a FIFO no one writes to, unreadable files.
        add(["cat", "\(d)/missing"], 1, "no such file")
        add(["cat", "relative/missing"], 1, "no such file")
        add(["cat", "\(file)/child"], 1, "not a directory")
        add(["cat", "\(d)/dir"], 1, "directory")
        add(["cat", "/"], 1, "directory")
        add(["checksum", "\(d)/dir"], 1, "directory")
        add(["info", "\(d)/dir"], 1, "directory")
        add(["ls", "\(d)/dir"], 1, "directory")
        add(["cat", "\(d)/loop1"], 1, "symbolic links")
        add(["cat", "\(d)/self"], 1, "symbolic links")
        add(["ls", "\(d)/loop1"], 1, "symbolic links")
        add(["cat", "file://\(d)/loop2"], 1, "symbolic links")
        add(["cat", "\(d)/fifo"], 1, "no writer")
        // index reads only a regular file: a FIFO (no writer) or a directory is refused at once.
        add(["index", "\(d)/fifo"], 1, "FIFO", "regular file")
        add(["index", "gzip:file://\(d)/fifo"], 1, "FIFO", "regular file")
        add(["index", "\(d)/dir"], 1, "directory", "regular file")
        add(["cat", "\(d)/" + String(repeating: "long", count: 1200)], 1, "too long")
        add(["cat", "\(d)/missing\nforged\tline"], 1, "no such file", "missing%0Aforged%09line")
        add(["cat", "\(d)/\u{1B}[31mred"], 1, "no such file", "%1B[31mred")
        add(["cat", "!/x"], 1, "no such file")
        rows.append(
            Row(
                arguments: ["cat", "\(d)/unreadable.txt"], status: 1, needles: ["permission denied"], unprivileged: true
            ))
        rows.append(
            Row(
                arguments: ["ls", "\(d)/unreadable.txt"], status: 1, needles: ["permission denied"], unprivileged: true)
        )
        // Offsets.
        for value in ["-1", "-99999999999"] {
            add(["cat", "--offset", value, file], 2, "offset", "0 or more")
        }
        add(["cat", "--offset=-5", file], 2, "0 or more")
        add(["cat", "--offset", "-0.5", file], 2, "invalid", "-0.5")
        add(["checksum", "--offset", "-1", file], 2, "0 or more")
        for value in ["abc", "", "1.5", "0x10", "99999999999999999999", "1e3", " 1"] {
            add(["cat", "--offset", value, file], 2, "offset")
        }
        add(["cat", file, "--offset"], 2, "missing value", "--offset")
        add(["cat", "--offset", "--1", file], 2, "missing value", "--offset")
        add(["cat", "--offset", "7", file], 1, "offset 7", "6 bytes")
        add(["cat", "--offset", "9223372036854775807", file], 1, "offset 9223372036854775807")
        add(["cat", "--offset", "100000", "\(tar)!/member.txt"], 1, "offset 100000")
        add(["cat", "--offset", "100000", "gzip:file://\(d)/file.gz"], 1, "offset 100000")
        // Inflate engines: a bad name is a usage error; each engine fails the same way.
        add(["cat", "--inflate", "bogus", file], 2, "--inflate", "bogus")
        add(["cat", "--inflate", file], 2, "--inflate")
        for engine in ["zlib", "isal", "auto"] {
            add(["cat", "--inflate", engine, "gzip:file://\(d)/truncated.tar.gz"], 1, "truncated")
            add(["checksum", "--inflate", engine, "gzip:file://\(text)"], 1, "gzip", "incorrect header check")
        }
        add(["checksum", "--offset", "5", "-"], 1, "offset 5")
        // Usage.
        add([], 2, "command")
        add(["frobnicate"], 2, "frobnicate")
        add(["cat", "--bogus"], 2, "--bogus")
        add(["cat", "-x", file], 2, "-x")
        add(["ls"], 2, "archive")
        add(["info"], 2, "source")
        add(["ls", "--library"], 2, "library")
        add(["help", "frobnicate"], 2, "frobnicate")
        // Photo libraries and asset URLs.
        add(["cat", "assets-library://asset/asset.JPG?id=1&ext=JPG"], 1, "--library")
        add(["cat", "--library", "\(d)/library", "assets-library://asset/asset.JPG"], 1, "no query")
        add(["cat", "--library", "\(d)/library", "assets-library://x"], 1, "asset URL")
        add(
            ["cat", "--library", "\(d)/library", "assets-library://asset/asset.JPG?id=a%G1&ext=JPG"], 1,
            "percent-escape")
        add(["cat", "--library", "\(d)/library", "assets-library://asset/asset.JPG?id=none&ext=JPG"], 1, "none")
        add(["ls", "--library", "\(d)/missing-library"], 1, "missing-library")
        return rows
    }

    @Test("each bad input: its exit status, one line on stderr naming what was wrong, nothing on stdout, no hang")
    func table() async throws {
        let d = try await Self.makeInputs()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let tool = Tool.binDirectory.appendingPathComponent("blobstream").path
        let asRoot = getuid() == 0
        let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let rows = Self.rows(d).filter { !$0.unprivileged || !asRoot || setpriv != nil }
        #expect(rows.count >= 100, "\(rows.count) rows")
        let results = Results(count: rows.count)
        // A hang is a row killed at its limit (checked below); the table's total time is not
        // asserted: speed is for benchmarks, and under ThreadSanitizer each run is slow.
        // Six at a time: the FIFO row waits for its writer's time limit.
        // The six workers wait on threads of their own (one `ProgramRuns` slot), off the
        // cooperative pool the other tests share.
        try await ProgramRuns.run {
            DispatchQueue.concurrentPerform(iterations: 6) { worker in
                for i in stride(from: worker, to: rows.count, by: 6) {
                    let row = rows[i]
                    let prefix =
                        row.unprivileged && asRoot
                        ? [setpriv!, "--reuid=65534", "--regid=65534", "--clear-groups"] : []
                    results.set(
                        i, BoundedRun.runBlocking(tool, row.arguments, limit: 30, workingDirectory: d, prefix: prefix))
                }
            }
        }
        for (row, r) in zip(rows, results.all) {
            let text = r.stderrText
            #expect(!r.timedOut, "\(row): hung (killed after \(r.seconds) s)")
            #expect(r.status == row.status, "\(row): status \(r.status), expected \(row.status); stderr: \(text)")
            #expect(r.stdout.isEmpty, "\(row): stdout: \(String(decoding: r.stdout.prefix(200), as: UTF8.self))")
            #expect(
                text.hasPrefix("blobstream: ") && text.hasSuffix("\n") && text.filter { $0 == "\n" }.count == 1,
                "\(row): not one line: \(text)")
            #expect(
                !text.dropLast().unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F },
                "\(row): control bytes: \(text)")
            for needle in row.needles {
                #expect(text.localizedCaseInsensitiveContains(needle), "\(row): does not say '\(needle)': \(text)")
            }
        }
    }

    @Test("cat of a FIFO with a writer reads it whole; with no writer it fails within the bound")
    func fifoWithWriter() async throws {
        let d = try await Self.makeInputs()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let tool = Tool.binDirectory.appendingPathComponent("blobstream").path
        // The writer opens the FIFO late (after the reader waits), and writes 1 MB.
        let r = await BoundedRun.run(
            "/bin/bash",
            ["-c", "(sleep 0.5; head -c 1000000 /dev/zero | tr '\\0' 'x' > fifo) & '\(tool)' cat fifo; wait"],
            limit: 20, workingDirectory: d)
        #expect(r.status == 0, "\(r.stderrText)")
        #expect(r.stdout == Data(repeating: UInt8(ascii: "x"), count: 1_000_000))
        let lone = await BoundedRun.run(tool, ["cat", "fifo"], limit: 20, workingDirectory: d)
        #expect(
            lone.status == 1 && lone.stderrText.contains("no writer") && lone.seconds < 15,
            "\(lone.stderrText) after \(lone.seconds) s")
    }
}

/// Results written by the table's workers, each to its own index, read after they finished.
final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [BoundedRun.Result?]
    init(count: Int) { items = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ r: BoundedRun.Result) { lock.withLock { items[i] = r } }
    var all: [BoundedRun.Result] { lock.withLock { items.map { $0! } } }
}
