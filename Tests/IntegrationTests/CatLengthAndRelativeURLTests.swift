import Foundation
import Testing

/// `cat --length N` (as `head -c`), and relative paths inside composed URLs.
@Suite("cat --length; relative paths in gzip: and archive: URLs")
struct CatLengthAndRelativeURLTests {
    static var tool: String { Tool.binDirectory.appendingPathComponent("blobstream").path }

    @Test(
        "cat --offset N --length M gives what tail -c +N+1 | head -c M gives",
        arguments: [(0, 0), (0, 1), (0, 65_536), (1000, 5000), (65_000, 10_000), (65_536, 10), (3, 200_000)])
    func lengthLikeHead(offset: Int, length: Int) async throws {
        let path = Tool.fixtures.appendingPathComponent("files/sample.bin").path
        let ours = try await Tool.blobstream(["cat", "--offset", String(offset), "--length", String(length), path])
        let reference = try await Tool.shell("tail -c +\(offset + 1) '\(path)' | head -c \(length)")
        #expect(ours.status == 0, "\(ours.stderr)")
        #expect(ours.stdout == reference.stdout)
        #expect(ours.stdout.count == min(length, 65_536 - offset), "fewer only at the end")
    }

    @Test("--length on a gzip stream, an archive member and standard input; each SOURCE gets its own")
    func lengthOnOtherSources() async throws {
        let dir = try await Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let gz = await BoundedRun.run(Self.tool, ["cat", "--length", "7", "gzip:x.gz"], workingDirectory: dir.path)
        #expect(gz.status == 0 && gz.stdout == Data("gzipped".utf8), "\(gz.stderrText)")
        let member = await BoundedRun.run(
            Self.tool, ["cat", "--offset", "2", "--length", "4", "x.tar!/m.txt", "-"],
            stdin: Data("standard input".utf8),
            workingDirectory: dir.path)
        #expect(member.status == 0 && member.stdout == Data("mberanda".utf8), "\(member.stderrText)")
        let negative = await BoundedRun.run(Self.tool, ["cat", "--length", "-1", "x.gz"], workingDirectory: dir.path)
        #expect(negative.status == 2 && negative.stderrText.contains("--length"))
    }

    /// A folder with `x.gz`, `x.tar` (member `m.txt`), `x.tar.gz`, `a/y.gz` and an empty `sub/`.
    static func makeFolder() async throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-rel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let script = """
            set -e
            cd "$1"
            mkdir a sub t
            printf 'gzipped text\\n' | gzip > x.gz
            printf 'in a\\n' | gzip > a/y.gz
            printf 'member text\\n' > t/m.txt
            tar -cf x.tar -C t m.txt
            gzip -k x.tar
            """
        let r = await BoundedRun.run("/bin/bash", ["-c", script, "make", dir.path])
        #expect(r.status == 0, "\(r.stderrText)")
        return dir
    }

    /// A SOURCE run from `folder` (in the folder `makeFolder` makes) and the bytes it gives.
    struct RelativeCase: Sendable, CustomStringConvertible {
        var folder: String
        var source: String
        var expected: String
        var description: String { "\(source) from '\(folder)'" }
    }

    @Test(
        "paths inside composed URLs are relative to the current folder",
        arguments: [
            RelativeCase(folder: "", source: "gzip:x.gz", expected: "gzipped text\n"),
            RelativeCase(folder: "", source: "archive:x.tar!/m.txt", expected: "member text\n"),
            RelativeCase(folder: "", source: "archive:gzip:x.tar.gz!/m.txt", expected: "member text\n"),
            RelativeCase(folder: "", source: "gzip:a/y.gz", expected: "in a\n"),
            RelativeCase(folder: "sub", source: "gzip:../a/y.gz", expected: "in a\n"),
            RelativeCase(folder: "sub", source: "archive:../x.tar!/m.txt", expected: "member text\n"),
            RelativeCase(folder: "sub", source: "../x.tar!/m.txt", expected: "member text\n"),
        ])
    func relativeInner(_ c: RelativeCase) async throws {
        let (folder, source, expected) = (c.folder, c.source, c.expected)
        let dir = try await Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cwd = dir.appendingPathComponent(folder).path
        let r = await BoundedRun.run(Self.tool, ["cat", source], workingDirectory: cwd)
        #expect(r.status == 0, "\(source): \(r.stderrText)")
        #expect(String(decoding: r.stdout, as: UTF8.self) == expected, "\(source)")
        let info = await BoundedRun.run(Self.tool, ["info", source], workingDirectory: cwd)
        #expect(String(decoding: info.stdout, as: UTF8.self).contains("file://\(dir.path)/"), "the URL is absolute")
    }

    @Test("a relative path inside a composed URL that names nothing is an error naming it")
    func relativeMissing() async throws {
        let dir = try await Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        for source in ["gzip:nothing.gz", "archive:nothing.tar!/m.txt"] {
            let r = await BoundedRun.run(Self.tool, ["cat", source], workingDirectory: dir.path)
            #expect(r.status == 1 && r.stdout.isEmpty)
            #expect(r.stderrText.contains("nothing."), "\(r.stderrText)")
        }
    }
}
