import Foundation
import Glibc
import Testing

/// A run killed while it writes an index leaves nothing behind that a later run does not
/// remove: the bytes go to an unnamed file (`O_TMPFILE`) until the instant they replace the
/// destination, and a temporary name a killed run left (`.NAME.blobstream-…`) is removed by
/// the next write of that destination once it is stale.
@Suite("index: a killed run leaves no temporary file behind")
struct KilledWriteTests {
    static var tool: String { Tool.binDirectory.appendingPathComponent("blobstream").path }

    /// The names in `folder`, sorted.
    static func names(_ folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
    }

    @Test("a stale temporary file a killed run left is removed by the next write; a fresh one is not")
    func staleLeftoverRemoved() async throws {
        let folder = try await IndexDestinationTests.Folder()
        let stale = folder[".data.gz.gzidx.blobstream-k1ll3d"]
        let fresh = folder[".data.gz.gzidx.blobstream-l1v3"]
        let other = folder[".other.gzidx.blobstream-k1ll3d"]
        for path in [stale, fresh, other] {
            #expect(FileManager.default.createFile(atPath: path, contents: Data("partial".utf8)))
        }
        // Untouched for an hour: a run that died long ago.
        var times = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, stale, &times, 0) == 0)
        #expect(utimensat(AT_FDCWD, other, &times, 0) == 0)
        let run = await BoundedRun.run(Self.tool, ["index", folder["data.gz"]], limit: 60)
        #expect(run.status == 0, "\(run.stderrText)")
        let names = try Self.names(folder.path)
        #expect(!names.contains(".data.gz.gzidx.blobstream-k1ll3d"), "the stale leftover stays: \(names)")
        #expect(names.contains(".data.gz.gzidx.blobstream-l1v3"), "a fresh one may be a live run's: \(names)")
        #expect(names.contains(".other.gzidx.blobstream-k1ll3d"), "another destination's is not ours to remove")
        #expect(names.contains("data.gz.gzidx"))
        #expect(names.filter { $0.contains(".blobstream-") }.count == 2, "\(names)")
    }
}
