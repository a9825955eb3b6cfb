import Foundation
import Testing

/// `blobstream checksum` against GNU coreutils' `sha256sum`, `sha512sum`, `sha1sum` and
/// `md5sum` (byte-identical output, odd names included), and `--check` against `sha256sum -c`.
@Suite("checksum: byte-compatible with sha256sum and its siblings")
struct ChecksumCompatibilityTests {
    /// Names GNU escapes (backslash, newline, carriage return) and names it writes as they are.
    static let names = [
        "plain.txt", "with space.txt", "tab\there", "new\nline", "back\\slash", "cr\rreturn",
        "both\\and\nnewline", "naïve ☃.jpg", "trailing space ",
    ]

    /// A fresh folder holding one small file per name above (each a different content).
    static func makeFolder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-sums-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (i, name) in names.enumerated() {
            try Data("content \(i) of \(name)\n".utf8 + Data(repeating: UInt8(i), count: 1000 * i))
                .write(to: dir.appendingPathComponent(name))
        }
        return dir
    }

    static var tool: String { Tool.binDirectory.appendingPathComponent("blobstream").path }

    @Test(
        "the same bytes on stdout as the GNU tool, names relative to the folder",
        arguments: ["sha256", "sha512", "sha1", "md5"])
    func sameOutput(algorithm: String) async throws {
        let dir = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ours = await BoundedRun.run(
            Self.tool, ["checksum", "--algorithm", algorithm] + Self.names, workingDirectory: dir.path)
        let gnu = await BoundedRun.run("/usr/bin/\(algorithm)sum", Self.names, workingDirectory: dir.path)
        #expect(gnu.status == 0 && ours.status == 0, "\(ours.stderrText)")
        #expect(ours.stdout == gnu.stdout, "\(String(decoding: ours.stdout, as: UTF8.self))")
        #expect(ours.stdout.split(separator: UInt8(ascii: "\n")).count == Self.names.count, "one line per name")
        // Absolute paths and standard input too.
        let path = dir.appendingPathComponent("back\\slash").path
        let absolute = await BoundedRun.run(
            Self.tool, ["checksum", "-a", algorithm, path, "-"], stdin: Data("in\n".utf8))
        let gnuAbsolute = await BoundedRun.run("/usr/bin/\(algorithm)sum", [path, "-"], stdin: Data("in\n".utf8))
        #expect(absolute.stdout == gnuAbsolute.stdout)
    }

    @Test("crc32: zlib's CRC-32 as 8 lowercase hex digits, as Python's zlib.crc32 gives it")
    func crc32() async throws {
        let dir = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ours = await BoundedRun.run(
            Self.tool, ["checksum", "--algorithm", "crc32", "plain.txt", "naïve ☃.jpg"], workingDirectory: dir.path)
        // Python's `zlib.crc32(open(n, "rb").read())` of each file, printed as `'%08x  %s' % (crc, n)`
        // (Python 3.11; the contents are makeFolder's: "content I of NAME\n" and 1000 × I bytes I).
        let expected = "797f4015  plain.txt\nd5c02ef6  naïve ☃.jpg\n"
        #expect(ours.status == 0, "\(ours.stderrText)")
        #expect(ours.stdout == Data(expected.utf8), "\(String(decoding: ours.stdout, as: UTF8.self))")
        // The empty input's CRC-32 is 0.
        let empty = await BoundedRun.run(Self.tool, ["checksum", "-a", "crc32", "-"])
        #expect(String(decoding: empty.stdout, as: UTF8.self) == "00000000  -\n")
    }

    @Test("--check reads what sha256sum wrote and reports as sha256sum -c does")
    func check() async throws {
        let dir = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sums = await BoundedRun.run("/usr/bin/sha256sum", Self.names, workingDirectory: dir.path)
        try sums.stdout.write(to: dir.appendingPathComponent("SUMS"))

        let ok = await BoundedRun.run(Self.tool, ["checksum", "--check", "SUMS"], workingDirectory: dir.path)
        let gnuOK = await BoundedRun.run("/usr/bin/sha256sum", ["-c", "SUMS"], workingDirectory: dir.path)
        #expect(ok.status == 0 && gnuOK.status == 0, "\(ok.stderrText)")
        #expect(ok.stdout == gnuOK.stdout, "\(String(decoding: ok.stdout, as: UTF8.self))")
        #expect(ok.stderr.isEmpty)
        // The BSD form `--tag` writes, odd names escaped as GNU escapes them.
        let tagged = await BoundedRun.run("/usr/bin/sha512sum", ["--tag"] + Self.names, workingDirectory: dir.path)
        let taggedOK = await BoundedRun.run(
            Self.tool, ["checksum", "-c", "-a", "sha512", "-"], stdin: tagged.stdout, workingDirectory: dir.path)
        let gnuTaggedOK = await BoundedRun.run(
            "/usr/bin/sha512sum", ["-c", "-"], stdin: tagged.stdout, workingDirectory: dir.path)
        #expect(taggedOK.status == 0 && taggedOK.stdout == gnuTaggedOK.stdout, "\(taggedOK.stderrText)")
        let quiet = await BoundedRun.run(Self.tool, ["checksum", "-c", "--quiet", "SUMS"], workingDirectory: dir.path)
        #expect(quiet.status == 0 && quiet.stdout.isEmpty)

        // A changed file, a missing file and a line that is not a checksum line.
        try Data("changed\n".utf8).write(to: dir.appendingPathComponent("tab\there"))
        try FileManager.default.removeItem(at: dir.appendingPathComponent("plain.txt"))
        try (sums.stdout + Data("not a checksum line\n".utf8)).write(to: dir.appendingPathComponent("SUMS"))
        let bad = await BoundedRun.run(Self.tool, ["checksum", "--check", "SUMS"], workingDirectory: dir.path)
        let gnuBad = await BoundedRun.run("/usr/bin/sha256sum", ["-c", "SUMS"], workingDirectory: dir.path)
        #expect(bad.status == 1 && gnuBad.status == 1)
        #expect(bad.stdout == gnuBad.stdout, "\(String(decoding: bad.stdout, as: UTF8.self))")
        let stdout = String(decoding: bad.stdout, as: UTF8.self)
        #expect(stdout.contains("tab\there: FAILED\n") && stdout.contains("plain.txt: FAILED open or read\n"))
        for warning in [
            "WARNING: 1 line is improperly formatted", "WARNING: 1 listed file could not be read",
            "WARNING: 1 computed checksum did NOT match", "plain.txt",
        ] {
            #expect(bad.stderrText.contains(warning), "\(bad.stderrText)")
        }
        let status = await BoundedRun.run(
            Self.tool, ["checksum", "--check", "--status", "SUMS"], workingDirectory: dir.path)
        #expect(status.status == 1 && status.stdout.isEmpty)

        // Nothing in the form: a failure that says what form was expected.
        let none = await BoundedRun.run(Self.tool, ["checksum", "--check", "-"], stdin: Data("hello\n".utf8))
        #expect(none.status == 1 && none.stderrText.contains("no properly formatted"), "\(none.stderrText)")
        // The algorithm comes from --algorithm: md5sum's lines check with -a md5.
        let md5 = await BoundedRun.run("/usr/bin/md5sum", ["naïve ☃.jpg"], workingDirectory: dir.path)
        let md5Check = await BoundedRun.run(
            Self.tool, ["checksum", "-c", "-a", "md5", "-"], stdin: md5.stdout, workingDirectory: dir.path)
        #expect(md5Check.status == 0 && String(decoding: md5Check.stdout, as: UTF8.self) == "naïve ☃.jpg: OK\n")
    }

    @Test(
        "--check reads 'HEX NAME' (one blank) and tabs as sha256sum -c does; the first line settles the form for the run"
    )
    func oneBlankForm() async throws {
        let dir = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let names = Self.names + ["*star", " lead"]
        for name in names.suffix(2) { try Data("\(name)\n".utf8).write(to: dir.appendingPathComponent(name)) }
        let sums = await BoundedRun.run("/usr/bin/sha256sum", names, workingDirectory: dir.path)
        try #require(sums.status == 0, "\(sums.stderrText)")
        let standard = String(decoding: sums.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        func oneBlank(_ line: String) -> String {
            var line = line
            if let gap = line.range(of: "  ") { line.replaceSubrange(gap, with: " ") }
            return line
        }
        let hex = { (name: String) in String(standard[names.firstIndex(of: name)!].prefix(64)) }
        let wrong = String(repeating: "0", count: 64)
        let lists: [(String, [String])] = [
            ("one blank", standard.map(oneBlank) + ["\(wrong) plain.txt", "\(hex("plain.txt")) missing.txt"]),
            ("tabs", ["\(hex("plain.txt"))\tplain.txt", "\(hex("*star"))\t*star", "\(hex(" lead"))\t lead"]),
            ("tab and a mode character", ["\(hex("plain.txt"))\t*plain.txt", "\(hex("plain.txt")) plain.txt"]),
            ("two blanks, then one", standard.prefix(3) + standard.map(oneBlank)),
            ("one blank, then two", standard.suffix(2).map(oneBlank) + standard),
            ("leading blanks", ["  \(standard[0])", "\t\(oneBlank(standard[0]))"]),
            ("a blank and one character", ["\(hex("plain.txt")) *", "\(hex("plain.txt"))  "]),
        ]
        func warnings(_ text: String) -> [String] {
            text.split(separator: "\n").compactMap { line in
                line.range(of: "WARNING: ").map { String(line[$0.upperBound...]) }
            }
        }
        for (name, lines) in lists {
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: dir.appendingPathComponent("SUMS"))
            let ours = await BoundedRun.run(Self.tool, ["checksum", "--check", "SUMS"], workingDirectory: dir.path)
            let gnu = await BoundedRun.run("/usr/bin/sha256sum", ["-c", "SUMS"], workingDirectory: dir.path)
            #expect(ours.status == gnu.status, "\(name): status \(ours.status), sha256sum \(gnu.status)")
            #expect(
                ours.stdout == gnu.stdout,
                "\(name): \(String(decoding: ours.stdout, as: UTF8.self)) -- sha256sum: \(String(decoding: gnu.stdout, as: UTF8.self))"
            )
            #expect(warnings(ours.stderrText) == warnings(gnu.stderrText), "\(name): \(ours.stderrText)")
        }
        // The form is settled for the whole run, across lists: after a list of two-blank
        // lines, a list of one-blank lines has no properly formatted line; the other way
        // round, the second blank of each line is the name's first character.
        let plain = standard.prefix(Self.names.count)
        try Data((plain.map(oneBlank).joined(separator: "\n") + "\n").utf8).write(to: dir.appendingPathComponent("ONE"))
        try Data((plain.joined(separator: "\n") + "\n").utf8).write(to: dir.appendingPathComponent("TWO"))
        for order in [["TWO", "ONE"], ["ONE", "TWO"]] {
            let ours = await BoundedRun.run(Self.tool, ["checksum", "--check"] + order, workingDirectory: dir.path)
            let gnu = await BoundedRun.run("/usr/bin/sha256sum", ["-c"] + order, workingDirectory: dir.path)
            #expect(ours.status == 1 && gnu.status == 1, "\(order): \(ours.stderrText)")
            #expect(ours.stdout == gnu.stdout, "\(order): \(String(decoding: ours.stdout, as: UTF8.self))")
            #expect(
                ours.stderrText.contains("ONE: no properly formatted") == (order[0] == "TWO"),
                "\(order): \(ours.stderrText)")
        }
    }

    @Test("--quiet and --status without --check are usage errors")
    func usage() async throws {
        let r = await BoundedRun.run(Self.tool, ["checksum", "--quiet", "x"])
        #expect(r.status == 2 && r.stderrText.contains("--check"), "\(r.stderrText)")
        let a = await BoundedRun.run(Self.tool, ["checksum", "--algorithm", "sha3", "x"])
        #expect(a.status == 2 && a.stderrText.contains("sha3"), "\(a.stderrText)")
    }
}
