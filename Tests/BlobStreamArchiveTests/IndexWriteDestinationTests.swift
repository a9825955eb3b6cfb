import BlobStream
import BlobStreamArchive
import BlobStreamGzip
import Foundation
import Testing

/// The library's index writers never replace a FIFO, a device or a folder with a regular
/// file (their write goes to a temporary file renamed over the path).
@Suite("Index files are written only to new paths or regular files")
struct IndexWriteDestinationTests {
    @Test("GzipIndex.write and ArchiveIndex.write refuse a FIFO, a link to one and a folder, left as they were")
    func refusals() throws {
        let dir = try makeTemporaryDirectory("index-destination")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(textBytes(200_000, seed: 9), to: dir + "/tree/t.txt")
        try run("sh", ["-c", "gzip -c -n '\(dir)/tree/t.txt' > '\(dir)/t.gz'"])
        try run("bsdtar", ["--format", "ustar", "-cf", dir + "/a.tar", "-C", dir + "/tree", "."])
        let gzipIndex = try GzipIndex.build(fileAtPath: dir + "/t.gz")
        let archiveIndex = try ArchiveIndex.build(archiveAt: dir + "/a.tar")
        #expect(mkfifo(dir + "/fifo", 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: dir + "/fifo")
        try FileManager.default.createDirectory(atPath: dir + "/folder", withIntermediateDirectories: false)
        for target in ["fifo", "link", "folder"] {
            let path = dir + "/" + target
            #expect(throws: BlobStreamError.self, "gzip index onto \(target)") { try gzipIndex.write(toPath: path) }
            #expect(throws: BlobStreamError.self, "archive index onto \(target)") { try archiveIndex.write(to: path) }
        }
        var info = stat()
        #expect(stat(dir + "/fifo", &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
        #expect(lstat(dir + "/link", &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
        #expect(stat(dir + "/folder", &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
        // A new path and a regular file are written.
        try gzipIndex.write(toPath: dir + "/new.gzidx")
        try archiveIndex.write(to: dir + "/new.gzidx")
        #expect(try ArchiveIndex.read(from: dir + "/new.gzidx").members == archiveIndex.members)
    }
}
