import Foundation
import NginxTestServer
import Testing

/// `blobstream upload SOURCE --to http://… --build-index --index-output PATH`: the index built
/// from the bytes as they go out to a web server, bound to the object the server then serves
/// at `--to`, written where `--index-output` says; a member of the stored object read through
/// it. Flags that cannot work are refused before any request.
@Suite("upload --build-index to a web server (nginx)")
struct UploadBuildIndexWebTests {
    /// A tar.gz of three members (random bytes), made by tar and gzip in `folder`.
    static func tarGzip(in folder: URL) async throws -> (path: String, members: [String: Data]) {
        let tree = folder.appendingPathComponent("tree")
        try FileManager.default.createDirectory(at: tree.appendingPathComponent("d"), withIntermediateDirectories: true)
        var members: [String: Data] = [:]
        var generator = SystemRandomNumberGenerator()
        for (i, size) in [3 << 20, 123, 1 << 20 | 77].enumerated() {
            let name = "d/m\(i).bin"
            let data = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
            try data.write(to: tree.appendingPathComponent(name))
            members[name] = data
        }
        let path = folder.appendingPathComponent("a.tar.gz").path
        let made = try await Tool.shell("cd '\(tree.path)' && tar cf - d | gzip -1 > '\(path)'")
        try #require(made.status == 0, "\(made.stderr)")
        return (path, members)
    }

    @Test(
        "a tar.gz from a pipe and from a file: the member index at --index-output, bound to the served object; each member read through it",
        arguments: [true, false])
    func tarGzip(fromPipe: Bool) async throws {
        let server = try NginxTestServer()
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-upidx-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (path, members) = try await Self.tarGzip(in: folder)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let index = folder.appendingPathComponent("kept.blobidx").path
        let url = "\(server.baseURL)/files/a.tar.gz"
        let source = fromPipe ? "- < '\(path)'" : "'\(path)'"
        let upload = try await Tool.shell(
            "\"$BLOBSTREAM\" upload \(source) --to \(url) --build-index --index-output '\(index)'")
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(server.stored("a.tar.gz") == bytes)
        // As `index` prints it: where, what, how large.
        // Three files and their folder.
        #expect(upload.text.hasPrefix("\(index)\t4 members (tar.gz)\t"), "\(upload.text)")
        #expect(FileManager.default.fileExists(atPath: index))
        for (name, data) in members {
            let read = try await Tool.blobstream(["cat", "--verbose", "--index", index, "archive:\(url)!/\(name)"])
            #expect(read.status == 0 && read.stdout == data, "\(name): \(read.stderr)")
        }
        // Bound to the object: once the server holds other bytes there, the index is refused.
        let other = try await Tool.shell("printf other | \"$BLOBSTREAM\" upload - --to \(url)")
        #expect(other.status == 0, "\(other.stderr)")
        let stale = try await Tool.blobstream(["cat", "--index", index, "archive:\(url)!/d/m1.bin"])
        #expect(stale.status != 0 && stale.stdout.isEmpty, "\(stale.stderr)")
        #expect(stale.stderr.contains(index), "\(stale.stderr)")
    }

    @Test(
        "flags that cannot build an index for a web server: exit 2, one line naming what is wrong, no upload",
        arguments: [
            (["--build-index"], "--index-output"),
            (["--index-output", "x.blobidx"], "--build-index"),
            (["--build-index", "--index-output", "x.blobidx", "--method", "POST"], "POST"),
            (["--build-index", "--index-output", "x.blobidx", "--multipart", "file"], "--multipart"),
        ])
    func refused(flags: [String], named: String) async throws {
        let server = try NginxTestServer()
        defer { server.stop() }
        let result = try await Tool.blobstream(
            ["upload", "-", "--to", "\(server.baseURL)/files/r.bin"] + flags, stdin: Data("abc".utf8))
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(named), "\(result.stderr)")
        #expect(server.stored("r.bin") == nil)
    }
}
