import BlobStream
import BlobStreamCompression
import BlobStreamTestSupport
import Foundation
import Testing

/// The index cache: one file per object version (URL, size, ETag), kept atomically, and the
/// folder pruned to its size limit, least recently used first.
@Suite("Index cache")
struct IndexCacheTests {
    /// A new folder of its own under the temporary folder.
    func makeTemporaryDirectory(_ label: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static let object = BlobContentIdentity.remote(size: 1000, entityTag: "\"abc\"")

    @Test("each version of an object has a path of its own; a kept index is found again, an unknown one is not")
    func paths() throws {
        let dir = try makeTemporaryDirectory("index-cache-paths")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cache = IndexCache(folder: dir + "/indexes")
        let url = "s3://b/k.tar"
        let path = cache.path(forSourceAt: url, identity: Self.object, kind: .archive)
        #expect(path.hasPrefix(dir + "/indexes/") && path.hasSuffix(".blobidx"))
        #expect(path == cache.path(forSourceAt: url, identity: Self.object, kind: .archive))
        let others = [
            cache.path(forSourceAt: url, identity: .remote(size: 1000, entityTag: "\"abd\""), kind: .archive),
            cache.path(forSourceAt: url, identity: .remote(size: 1001, entityTag: "\"abc\""), kind: .archive),
            cache.path(forSourceAt: "s3://b/k2.tar", identity: Self.object, kind: .archive),
            cache.path(forSourceAt: url, identity: Self.object, kind: .gzip),
        ]
        #expect(Set(others + [path]).count == 5)
        #expect(cache.existingPath(forSourceAt: url, identity: Self.object, kind: .archive) == nil)
        let kept = try cache.keep(Data([1, 2, 3]), forSourceAt: url, identity: Self.object, kind: .archive)
        #expect(kept == path)
        #expect(cache.existingPath(forSourceAt: url, identity: Self.object, kind: .archive) == path)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data([1, 2, 3]))
        #expect(cache.existingPath(forSourceAt: url, identity: Self.object, kind: .gzip) == nil)
    }

    @Test("past its size limit the folder loses its least recently used indexes first, never the one just kept")
    func prune() throws {
        let dir = try makeTemporaryDirectory("index-cache-prune")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cache = IndexCache(folder: dir, sizeLimit: 2500)
        var paths: [String] = []
        for i in 0..<3 {
            let identity = BlobContentIdentity.remote(size: Int64(i), entityTag: "\"\(i)\"")
            paths.append(try cache.keep(Data(count: 1000), forSourceAt: "s3://b/\(i)", identity: identity, kind: .gzip))
            // Kept in order, a second apart: 0 is the oldest.
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: Double(i - 10))], ofItemAtPath: paths[i])
        }
        // 3,000 bytes held: the third keep removed the oldest (0).
        #expect(!FileManager.default.fileExists(atPath: paths[0]))
        #expect(FileManager.default.fileExists(atPath: paths[1]) && FileManager.default.fileExists(atPath: paths[2]))
        // 1 is used again (its time set to now): the next keep removes 2, not 1.
        #expect(
            cache.existingPath(
                forSourceAt: "s3://b/1", identity: .remote(size: 1, entityTag: "\"1\""), kind: .gzip) == paths[1])
        let fourth = try cache.keep(
            Data(count: 1000), forSourceAt: "s3://b/3", identity: .remote(size: 3, entityTag: "\"3\""), kind: .gzip)
        #expect(FileManager.default.fileExists(atPath: paths[1]) && FileManager.default.fileExists(atPath: fourth))
        #expect(!FileManager.default.fileExists(atPath: paths[2]))
        // A file of another kind is never pruned; one larger than the limit is kept alone.
        let other = dir + "/notes.txt"
        try Data(count: 5000).write(to: URL(fileURLWithPath: other))
        let big = try cache.keep(
            Data(count: 4000), forSourceAt: "s3://b/4", identity: .remote(size: 4, entityTag: "\"4\""), kind: .archive)
        #expect(FileManager.default.fileExists(atPath: other) && FileManager.default.fileExists(atPath: big))
        #expect(!FileManager.default.fileExists(atPath: paths[1]) && !FileManager.default.fileExists(atPath: fourth))
    }

    @Test("pruning removes only the cache's own entries: a user's index files in the folder stay, byte for byte")
    func pruneKeepsUserFiles() throws {
        let dir = try makeTemporaryDirectory("index-cache-user-files")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The folder where a user keeps indexes, named as the cache's folder: their files are
        // older than anything the cache keeps, and of the kinds it keeps.
        let mine: [String: Data] = [
            "photos.tar.gz.blobidx": Data(repeating: 1, count: 1500),
            "big.bin.gz.gzidx": Data(repeating: 2, count: 1500),
            "0123456789abcdef0123456789abcdef.gzidx": Data(repeating: 3, count: 1500),
            "blobstream-cache-mine.blobidx": Data(repeating: 4, count: 1500),
        ]
        for (name, bytes) in mine {
            let path = dir + "/" + name
            try bytes.write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: -86400)], ofItemAtPath: path)
        }
        let cache = IndexCache(folder: dir, sizeLimit: 2500)
        var kept: [String] = []
        for i in 0..<4 {
            let identity = BlobContentIdentity.remote(size: Int64(i), entityTag: "\"\(i)\"")
            kept.append(try cache.keep(Data(count: 1000), forSourceAt: "s3://b/\(i)", identity: identity, kind: .gzip))
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: Double(i - 10))], ofItemAtPath: kept[i])
        }
        // The cache's own entries were pruned to the limit (the two newest stay) ...
        #expect(kept.map { FileManager.default.fileExists(atPath: $0) } == [false, false, true, true])
        // ... and every file of the user's is there with its bytes.
        for (name, bytes) in mine {
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name)) == bytes, "\(name)")
        }
    }

    @Test("a folder that cannot be made is an error naming it")
    func unwritable() throws {
        let dir = try makeTemporaryDirectory("index-cache-bad")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data().write(to: URL(fileURLWithPath: dir + "/file"))
        let cache = IndexCache(folder: dir + "/file/indexes")
        #expect {
            try cache.keep(Data([1]), forSourceAt: "s3://b/k", identity: Self.object, kind: .gzip)
        } throws: { error in
            (error as? BlobStreamError)?.code == .ioFailed && "\(error)".contains(dir + "/file/indexes")
        }
    }
}
