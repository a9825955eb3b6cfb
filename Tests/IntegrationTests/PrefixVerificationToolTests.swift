import Foundation
import Testing

/// `cat --length` and `--offset --length` report success only for bytes a check covered;
/// `--unverified-prefix` is the explicit, unverified preview. And foreign gzip indexes:
/// refused as they are, adopted with `index --from`, or read UNVERIFIED by name.
@Suite("Prefix reads are verified; foreign gzip indexes adopted or refused")
struct PrefixVerificationToolTests {
    static var tool: String { Tool.binDirectory.appendingPathComponent("blobstream").path }

    /// A folder with a 1 MiB random file `r.bin` and `r.gz` (gzip stores random data as it
    /// is, so a flipped byte there inflates to a wrong byte that only the CRC-32 sees),
    /// `m.zip` and `s.zip` (deflate and stored) and `t.tar.gz`, `t.tar.xz` holding `r.bin`.
    static func makeFolder() async throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "blobstream-prefix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let script = """
            set -e
            cd "$1"
            head -c 1048576 /dev/urandom > r.bin
            gzip -c -n r.bin > r.gz
            bsdtar --format zip -cf m.zip r.bin
            bsdtar --format zip --options zip:compression=store -cf s.zip r.bin
            bsdtar -czf t.tar.gz r.bin
            bsdtar -cJf t.tar.xz r.bin
            """
        let r = await BoundedRun.run("/bin/bash", ["-c", script, "make", dir.path])
        #expect(r.status == 0, "\(r.stderrText)")
        return dir
    }

    /// Flips one bit at `offset` of the file at `path`, keeping its modification time.
    static func flip(_ path: String, at offset: Int) throws {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        data[offset] ^= 0x10
        try data.write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes(
            [.modificationDate: attributes[.modificationDate] as Any], ofItemAtPath: path)
    }

    struct Case: Sendable, CustomStringConvertible {
        var file: String
        var source: String
        var description: String { source }
    }

    static let cases = [
        Case(file: "r.gz", source: "gzip:r.gz"),
        Case(file: "m.zip", source: "m.zip!/r.bin"),
        Case(file: "s.zip", source: "s.zip!/r.bin"),
        Case(file: "t.tar.gz", source: "t.tar.gz!/r.bin"),
        Case(file: "t.tar.xz", source: "t.tar.xz!/r.bin"),
    ]

    @Test(
        "a flipped byte: --length (the size, or shorter) and --offset --length fail, naming the source",
        arguments: cases)
    func flippedPrefixesFail(_ c: Case) async throws {
        let dir = try await Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent(c.file).path
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        // Inside the stored or compressed bytes of r.bin, well before its end.
        try Self.flip(path, at: size / 2)
        for arguments in [
            ["--length", "1048576"], ["--length", "800000"], ["--offset", "100000", "--length", "4096"],
            ["--length", "1"],
        ] {
            let r = await BoundedRun.run(
                Self.tool, ["cat"] + arguments + [c.source], limit: 60, workingDirectory: dir.path)
            #expect(r.status == 1, "\(c.source) \(arguments): exit \(r.status), \(r.stdout.count) bytes written")
            #expect(r.stderrText.contains(c.file), "\(c.source) \(arguments): \(r.stderrText)")
        }
    }

    @Test("the same reads with the member index (built before the flip) fail too", arguments: cases.dropFirst())
    func flippedPrefixesFailWithIndex(_ c: Case) async throws {
        let dir = try await Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent(c.file).path
        let built = await BoundedRun.run(Self.tool, ["index", c.file], workingDirectory: dir.path)
        #expect(built.status == 0, "\(built.stderrText)")
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        try Self.flip(path, at: size / 2 + 1)
        for arguments in [["--length", "1048576"], ["--offset", "100000", "--length", "4096"]] {
            let r = await BoundedRun.run(
                Self.tool, ["cat"] + arguments + [c.source], limit: 60, workingDirectory: dir.path)
            #expect(r.status == 1, "\(c.source) \(arguments) with an index: exit \(r.status)")
            #expect(r.stderrText.contains(c.file), "\(c.source) \(arguments): \(r.stderrText)")
        }
    }

    @Test("--unverified-prefix stops at --length: what the check would have refused is written, exit 0")
    func unverifiedPrefixIsThePreview() async throws {
        let dir = try await Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let original = try Data(contentsOf: dir.appendingPathComponent("r.bin"))
        let gz = dir.appendingPathComponent("r.gz").path
        let size = try FileManager.default.attributesOfItem(atPath: gz)[.size] as! Int
        try Self.flip(gz, at: size / 2)
        let checked = await BoundedRun.run(
            Self.tool, ["cat", "--length", "800000", "gzip:r.gz"], workingDirectory: dir.path)
        #expect(
            checked.status == 1 && checked.stderrText.contains("r.gz") && checked.stderrText.contains("check"),
            "\(checked.stderrText)")
        let preview = await BoundedRun.run(
            Self.tool, ["cat", "--unverified-prefix", "--length", "800000", "gzip:r.gz"], workingDirectory: dir.path)
        #expect(preview.status == 0, "\(preview.stderrText)")
        #expect(preview.stdout.count == 800_000 && preview.stdout != original.prefix(800_000))
        let help = await BoundedRun.run(Self.tool, ["cat", "--help"])
        #expect(help.stdout.range(of: Data("UNVERIFIED".utf8)) != nil)
    }

    @Test("an intact file: --length reads right, and a plain file's prefix is not read on")
    func intactPrefixes() async throws {
        let dir = try await Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let original = try Data(contentsOf: dir.appendingPathComponent("r.bin"))
        for c in Self.cases + [Case(file: "r.bin", source: "r.bin")] {
            let r = await BoundedRun.run(
                Self.tool, ["cat", "--offset", "7", "--length", "300000", c.source], workingDirectory: dir.path)
            #expect(r.status == 0 && r.stdout == original.subdata(in: 7..<300_007), "\(c.source): \(r.stderrText)")
        }
    }

    @Test("a foreign GZIDX: refused as it is; --unverified-index reads through it; index --from adopts it")
    func foreignIndex() async throws {
        let dir = try await Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let original = try Data(contentsOf: dir.appendingPathComponent("r.bin"))
        let venv = await BoundedRun.run(
            Tool.repository.appendingPathComponent("scripts/indexed-gzip-venv").path, [], limit: 300)
        #expect(venv.status == 0, "\(venv.stderrText)")
        let python = String(decoding: venv.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let exported = await BoundedRun.run(
            python,
            [
                Tool.repository.appendingPathComponent("scripts/indexed-gzip-interop.py").path, "export", "r.gz",
                String(128 << 10), "theirs.gzidx",
            ], limit: 120, workingDirectory: dir.path)
        #expect(exported.status == 0, "\(exported.stderrText)")
        let range = ["--offset", "600000", "--length", "5000"]
        let refused = await BoundedRun.run(
            Self.tool, ["cat", "--index", "theirs.gzidx"] + range + ["gzip:r.gz"], workingDirectory: dir.path)
        #expect(refused.status == 1 && refused.stdout.isEmpty)
        #expect(
            refused.stderrText.contains("theirs.gzidx") && refused.stderrText.contains("index --from"),
            "\(refused.stderrText)")
        let unverified = await BoundedRun.run(
            Self.tool, ["cat", "--index", "theirs.gzidx", "--unverified-index"] + range + ["gzip:r.gz"],
            workingDirectory: dir.path)
        #expect(unverified.status == 0 && unverified.stdout == original.subdata(in: 600_000..<605_000))
        let adopted = await BoundedRun.run(
            Self.tool, ["index", "--from", "theirs.gzidx", "--output", "ours.gzidx", "r.gz"], limit: 60,
            workingDirectory: dir.path)
        #expect(adopted.status == 0, "\(adopted.stderrText)")
        let read = await BoundedRun.run(
            Self.tool, ["cat", "--index", "ours.gzidx"] + range + ["gzip:r.gz"], workingDirectory: dir.path)
        #expect(read.status == 0 && read.stdout == original.subdata(in: 600_000..<605_000), "\(read.stderrText)")
        // A foreign index of another file is not adopted.
        let other = await BoundedRun.run(
            "/bin/bash", ["-c", "seq 1 300000 | gzip -c -n > o.gz"], workingDirectory: dir.path)
        #expect(other.status == 0)
        let wrong = await BoundedRun.run(
            Self.tool, ["index", "--from", "theirs.gzidx", "--output", "o.gzidx", "o.gz"], limit: 60,
            workingDirectory: dir.path)
        #expect(wrong.status == 1 && wrong.stderrText.contains("theirs.gzidx"), "\(wrong.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("o.gzidx").path))
    }
}
