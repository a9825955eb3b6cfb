import BlobStream
import BlobStreamSystem
import BlobStreamTestSupport
import Foundation
import Glibc
import Testing

/// A folder of its own for a test, with paths in it.
private final class TemporaryFolder {
    let directory: TemporaryDirectory
    var path: String { directory.path }

    init() throws { directory = try TemporaryDirectory(prefix: "blobstream-output") }

    func path(_ name: String) -> String { path + "/" + name }

    /// Writes `data` to `name` in the folder; its path.
    func file(_ name: String, _ data: Data) throws -> String {
        try data.write(to: URL(fileURLWithPath: path(name)))
        return path(name)
    }

    /// A UNIX socket bound at `name` in the folder (a node that is not a regular file); its
    /// path. The descriptor stays open until the process ends.
    func socket(_ name: String) -> String {
        let path = path(name)
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(descriptor >= 0 && bound == 0)
        return path
    }
}

/// `OutputFile`: where the library and the tool may write an index or `--output`, and how
/// (atomically).
@Suite("OutputFile: refusals and atomic writes")
struct OutputFileTests {
    /// The refusal for writing to `path`, or nil when it is accepted.
    static func refusal(_ path: String, inputs: [String] = []) -> String? {
        do {
            _ = try OutputFile(path, role: "the index", inputs: inputs)
            return nil
        } catch {
            #expect(error.code == .invalidDestination, "\(error)")
            return error.message
        }
    }

    @Test("a FIFO, a directory, a dangling symbolic link, an input (by any link): refused, naming the path and why")
    func refusals() throws {
        let folder = try TemporaryFolder()
        let fifo = folder.path("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let input = try folder.file("input.gz", Data("input".utf8))
        let hardLink = folder.path("hard")
        #expect(link(input, hardLink) == 0)
        let dangling = folder.path("dangling")
        #expect(symlink(folder.path("nothing"), dangling) == 0)
        let cases: [(String, String)] = [
            (fifo, "it is a FIFO, not a regular file"),
            (folder.path, "it is a directory, not a regular file"),
            (folder.socket("socket"), "it is a socket, not a regular file"),
            (dangling, "it is a symbolic link that leads to no file"),
            (input, "it is the input '\(input)'"),
            (hardLink, "it is the input '\(input)' (the same file)"),
        ]
        for (path, why) in cases {
            let message = Self.refusal(path, inputs: [input])
            #expect(
                message?.hasPrefix("cannot write the index to '\(path)': \(why)") == true, "\(message ?? "accepted")")
            #expect(message?.contains("only to a new path or over a regular file") == true)
        }
        // Nothing was written to the FIFO or the input.
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == Data("input".utf8))
    }

    @Test(
        "a new path and a regular file are written whole; through a symbolic link, its target is replaced and the link stays"
    )
    func writes() throws {
        let folder = try TemporaryFolder()
        let fresh = try OutputFile(folder.path("new.idx"), role: "the index", inputs: [])
        try fresh.write(Data("first".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder.path("new.idx"))) == Data("first".utf8))
        let target = try folder.file("target.idx", Data("old".utf8))
        #expect(chmod(target, 0o640) == 0)
        let link = folder.path("link.idx")
        #expect(symlink(target, link) == 0)
        try OutputFile(link, role: "the index", inputs: []).write(Data("new bytes".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == Data("new bytes".utf8))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        var info = stat()
        #expect(stat(target, &info) == 0 && info.st_mode & 0o777 == 0o640)
        // No temporary file is left beside them.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
                "link.idx", "new.idx", "target.idx",
            ])
    }

    @Test("a failed write (the contents throw) leaves the destination as it was")
    func failedWrite() throws {
        struct Stop: Error {}
        let folder = try TemporaryFolder()
        let path = try folder.file("kept.idx", Data("kept".utf8))
        let output = try OutputFile(path, role: "the index", inputs: [])
        #expect(throws: Stop.self) {
            try output.write { write in
                try Data("partial".utf8).withUnsafeBytes { try write($0) }
                throw Stop()
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("kept".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["kept.idx"])
    }
}
