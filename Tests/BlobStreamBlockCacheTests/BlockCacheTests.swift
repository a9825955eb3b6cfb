import BlobStream
import BlobStreamSystem
import Foundation
import Glibc
import Testing

@testable import BlobStreamBlockCache

/// A fresh temporary folder, removed when the test ends.
private final class TemporaryFolder: Sendable {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "blockcache-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Deterministic bytes: block `index` of an object named `seed`.
private func blockBytes(_ count: Int, seed: UInt64, index: Int) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index)
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}

private final class ResultBox<T>: @unchecked Sendable { // written before the semaphore signals
    var value: T?
    init() {}
}

/// Runs `body` on a thread and fails the test when it takes longer than `seconds` (a hang).
private func withinSeconds<T: Sendable>(
    _ seconds: Double, _ body: @escaping @Sendable () -> T, sourceLocation: SourceLocation = #_sourceLocation
) -> T? {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Thread {
        box.value = body()
        done.signal()
    }.start()
    guard done.wait(timeout: .now() + seconds) == .success else {
        Issue.record("hung for more than \(seconds) s", sourceLocation: sourceLocation)
        return nil
    }
    return box.value
}

private let blockSize = 4096
private let key = BlockCache.ObjectKey(
    url: "https://example.com/data/object.bin", serverOrigin: "https://example.com:443", entityTag: "\"v1\"",
    size: 10 * 4096 + 100)

@Suite("BlockCache")
struct BlockCacheTests {
    @Test("a block written is read back byte for byte; the last block is short; a missing one is a miss")
    func roundTrip() throws {
        let folder = TemporaryFolder()
        let cache = BlockCache(folder: folder.path + "/blocks", sizeLimit: 1 << 20, blockSize: blockSize)
        #expect(cache.blockCount(of: key) == 11)
        #expect(cache.range(ofBlock: 10, in: key) == 40960..<41060)
        #expect(cache.read(key, block: 0) == nil)
        for index in [0, 3, 10] {
            let bytes = blockBytes(Int(cache.range(ofBlock: index, in: key)!.count), seed: 1, index: index)
            try cache.write(key, block: index, bytes: bytes)
            #expect(cache.read(key, block: index) == bytes)
        }
        #expect(cache.read(key, block: 1) == nil)
        #expect(cache.read(key, block: 11) == nil)
        // A wrong length or a block past the end is refused, nothing kept.
        #expect(throws: BlobStreamError.self) { try cache.write(key, block: 1, bytes: [1, 2, 3]) }
        #expect(throws: BlobStreamError.self) { try cache.write(key, block: 11, bytes: [1]) }
        // Another instance on the same folder reads the same blocks.
        let other = BlockCache(folder: folder.path + "/blocks", sizeLimit: 1 << 20, blockSize: blockSize)
        #expect(other.read(key, block: 3) == blockBytes(blockSize, seed: 1, index: 3))
        let summary = cache.contents()
        #expect(summary.objects.count == 1)
        #expect(summary.objects.first?.key == key)
        #expect(summary.objects.first?.blocks == 3)
        #expect(summary.totalBytes == Int64(3 * 64 + 2 * blockSize + 100))
        // Private: the folder and files are the user's only.
        #expect(CacheFolderCalls.linkStatus(cache.objectFolder(key)) != nil)
        var info = stat()
        stat(cache.blockPath(key, block: 0), &info)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test("a flipped payload byte, a flipped header byte, a truncated or extended file: a miss, and dropped")
    func damagedFiles() throws {
        let folder = TemporaryFolder()
        let cache = BlockCache(folder: folder.path, sizeLimit: 1 << 20, blockSize: blockSize)
        let bytes = blockBytes(blockSize, seed: 2, index: 0)
        let path = cache.blockPath(key, block: 0)
        typealias Damage = (String, (inout [UInt8]) -> Void)
        var damages: [Damage] = [
            ("payload byte", { $0[64 + 1000] ^= 0x10 }),
            ("last payload byte", { $0[$0.count - 1] ^= 0x01 }),
            ("truncated", { $0.removeLast(1) }),
            ("header only", { $0.removeLast(blockSize) }),
            ("empty", { $0.removeAll() }),
            ("extended", { $0.append(0) }),
        ]
        for offset in 0..<64 {
            let damage: Damage = ("header byte \(offset)", { $0[offset] ^= 0x04 })
            damages.append(damage)
        }
        for (what, damage) in damages {
            try cache.write(key, block: 0, bytes: bytes)
            var file = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            damage(&file)
            try Data(file).write(to: URL(fileURLWithPath: path))
            #expect(cache.read(key, block: 0) == nil, "\(what)")
            #expect(!FileManager.default.fileExists(atPath: path), "\(what): not dropped")
            try cache.write(key, block: 0, bytes: bytes)
            #expect(cache.read(key, block: 0) == bytes, "\(what): the block written again")
        }
    }

    @Test("a block file copied from another object or another index is refused")
    func misplacedBlock() throws {
        let folder = TemporaryFolder()
        let cache = BlockCache(folder: folder.path, sizeLimit: 1 << 20, blockSize: blockSize)
        let other = BlockCache.ObjectKey(url: "https://example.com/other", entityTag: "\"v1\"", size: key.size)
        try cache.write(other, block: 2, bytes: blockBytes(blockSize, seed: 3, index: 2))
        try cache.write(key, block: 1, bytes: blockBytes(blockSize, seed: 1, index: 1))
        try FileManager.default.createDirectory(
            atPath: (cache.blockPath(key, block: 2) as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: cache.blockPath(other, block: 2), toPath: cache.blockPath(key, block: 2))
        try FileManager.default.copyItem(atPath: cache.blockPath(key, block: 1), toPath: cache.blockPath(key, block: 3))
        #expect(cache.read(key, block: 2) == nil)
        #expect(cache.read(key, block: 3) == nil)
        #expect(cache.read(key, block: 1) == blockBytes(blockSize, seed: 1, index: 1))
    }

    @Test("a block file replaced by a FIFO, a link to a file outside, a folder: a miss, removed, no hang")
    func replacedFiles() throws {
        let folder = TemporaryFolder()
        let outside = TemporaryFolder()
        let cache = BlockCache(folder: folder.path + "/cache", sizeLimit: 1 << 20, blockSize: blockSize)
        let bytes = blockBytes(blockSize, seed: 4, index: 5)
        let path = cache.blockPath(key, block: 5)

        // A FIFO with no writer: opening it for reading the plain way would block for ever.
        try cache.write(key, block: 5, bytes: bytes)
        unlink(path)
        #expect(mkfifo(path, 0o600) == 0)
        #expect(withinSeconds(5) { cache.read(key, block: 5) } == .some(nil))
        #expect(CacheFolderCalls.linkStatus(path) == nil)

        // A link to a user's file outside the cache, even one holding a valid block.
        let userFile = outside.path + "/user-file"
        try cache.write(key, block: 5, bytes: bytes)
        let valid = try Data(contentsOf: URL(fileURLWithPath: path))
        try valid.write(to: URL(fileURLWithPath: userFile))
        unlink(path)
        #expect(symlink(userFile, path) == 0)
        #expect(withinSeconds(5) { cache.read(key, block: 5) } == .some(nil))
        #expect(CacheFolderCalls.linkStatus(path) == nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: userFile)) == valid, "the user's file untouched")

        // A link to a FIFO outside.
        let outsideFIFO = outside.path + "/fifo"
        #expect(mkfifo(outsideFIFO, 0o600) == 0)
        #expect(symlink(outsideFIFO, path) == 0)
        #expect(withinSeconds(5) { cache.read(key, block: 5) } == .some(nil))
        #expect(CacheFolderCalls.linkStatus(outsideFIFO)?.kind == .fifo)

        // A folder (holding a user's file through a link): removed, the link's target kept.
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(symlink(userFile, path + "/link") == 0)
        #expect(withinSeconds(5) { cache.read(key, block: 5) } == .some(nil))
        #expect(CacheFolderCalls.linkStatus(path) == nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: userFile)) == valid)

        // Writing over any of them keeps a whole block again.
        #expect(mkfifo(path, 0o600) == 0)
        try cache.write(key, block: 5, bytes: bytes)
        #expect(cache.read(key, block: 5) == bytes)
    }

    @Test("an object folder replaced by a link out of the cache: nothing written or removed there")
    func linkedObjectFolder() throws {
        let folder = TemporaryFolder()
        let outside = TemporaryFolder()
        let cache = BlockCache(folder: folder.path, sizeLimit: 1 << 20, blockSize: blockSize)
        try cache.write(key, block: 0, bytes: blockBytes(blockSize, seed: 5, index: 0))
        let objectFolder = cache.objectFolder(key)
        try FileManager.default.removeItem(atPath: objectFolder)
        let userFile = outside.path + "/keep-me"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: userFile))
        // A user's file there at a block's name (damaged, as the cache sees it): not read,
        // not removed.
        let decoy = outside.path + "/" + BlockCache.blockName(0)
        try Data(repeating: 9, count: 64 + blockSize).write(to: URL(fileURLWithPath: decoy))
        #expect(symlink(outside.path, objectFolder) == 0)
        #expect(cache.read(key, block: 0) == nil)
        #expect(FileManager.default.fileExists(atPath: decoy))
        try FileManager.default.removeItem(atPath: decoy)
        #expect(throws: BlobStreamError.self) {
            try cache.write(key, block: 0, bytes: blockBytes(blockSize, seed: 5, index: 0))
        }
        cache.prune(toBytes: 0)
        cache.dropObject(url: key.url, serverOrigin: key.serverOrigin)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["keep-me"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: userFile)) == Data([1, 2, 3]))

        // The object's URL folder a link: the same.
        let urlFolder = (objectFolder as NSString).deletingLastPathComponent
        try? FileManager.default.removeItem(atPath: urlFolder)
        let linkedTo = outside.path + "/" + (objectFolder as NSString).lastPathComponent
        try FileManager.default.createDirectory(atPath: linkedTo, withIntermediateDirectories: false)
        try Data(repeating: 9, count: 64 + blockSize).write(
            to: URL(fileURLWithPath: linkedTo + "/" + BlockCache.blockName(0)))
        #expect(symlink(outside.path, urlFolder) == 0)
        #expect(cache.read(key, block: 0) == nil)
        #expect(FileManager.default.fileExists(atPath: linkedTo + "/" + BlockCache.blockName(0)))
        #expect(throws: BlobStreamError.self) {
            try cache.write(key, block: 0, bytes: blockBytes(blockSize, seed: 5, index: 0))
        }
        cache.prune(toBytes: 0)
        cache.dropObject(url: key.url, serverOrigin: key.serverOrigin)
        #expect(FileManager.default.fileExists(atPath: linkedTo + "/" + BlockCache.blockName(0)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: userFile)) == Data([1, 2, 3]))
    }

    @Test("the size limit holds within one block after many writes")
    func sizeLimit() throws {
        let folder = TemporaryFolder()
        let fileSize = Int64(64 + blockSize)
        let limit = 20 * fileSize + 1000
        let cache = BlockCache(folder: folder.path, sizeLimit: limit, blockSize: blockSize)
        let objects = (0..<4).map {
            BlockCache.ObjectKey(url: "https://example.com/\($0)", entityTag: "e\($0)", size: 64 * Int64(blockSize))
        }
        for round in 0..<150 {
            let object = objects[round % objects.count]
            let index = (round * 7) % 64
            try cache.write(object, block: index, bytes: blockBytes(blockSize, seed: UInt64(round % 4), index: index))
            let total = cache.contents().totalBytes
            #expect(total <= limit + fileSize, "round \(round): \(total) bytes")
        }
        let summary = cache.contents()
        #expect(summary.totalBytes <= limit)
        #expect(summary.totalBytes >= limit - limit / 16 - 2 * fileSize, "evicted far more than needed")
        // What is there is right.
        for object in objects {
            for index in 0..<64 {
                if let bytes = cache.read(object, block: index) {
                    #expect(bytes == blockBytes(blockSize, seed: UInt64(objects.firstIndex(of: object)!), index: index))
                }
            }
        }
        // A limit smaller than a block keeps the block just written, and only it.
        let tiny = BlockCache(folder: folder.path, sizeLimit: 10, blockSize: blockSize)
        try tiny.write(objects[0], block: 63, bytes: blockBytes(blockSize, seed: 0, index: 63))
        #expect(tiny.contents().totalBytes == fileSize)
        #expect(tiny.read(objects[0], block: 63) != nil)
        tiny.prune(toBytes: 0)
        #expect(tiny.contents().totalBytes == 0)
        #expect(tiny.contents().objects.isEmpty)
    }

    @Test("the least recently used blocks go first: a block read recently survives")
    func leastRecentlyUsed() throws {
        let folder = TemporaryFolder()
        let fileSize = Int64(64 + blockSize)
        let cache = BlockCache(folder: folder.path, sizeLimit: 8 * fileSize, blockSize: blockSize)
        for index in 0..<8 { try cache.write(key, block: index, bytes: blockBytes(blockSize, seed: 6, index: index)) }
        #expect(cache.contents().totalBytes == 8 * fileSize)
        #expect(cache.read(key, block: 0) != nil)
        #expect(cache.read(key, block: 2) != nil)
        try cache.write(key, block: 8, bytes: blockBytes(blockSize, seed: 6, index: 8))
        // Over the limit by one block: the two least recently used go (1 and 3), down to
        // one block below the limit.
        #expect(cache.read(key, block: 1) == nil)
        #expect(cache.read(key, block: 3) == nil)
        for index in [0, 2, 4, 5, 6, 7, 8] {
            #expect(cache.read(key, block: index) == blockBytes(blockSize, seed: 6, index: index), "block \(index)")
        }
        #expect(cache.contents().totalBytes == 7 * fileSize)
    }

    @Test("another ETag or size is a miss; its first block drops the old version's; dropObject drops all")
    func versions() throws {
        let folder = TemporaryFolder()
        let cache = BlockCache(folder: folder.path, sizeLimit: 1 << 20, blockSize: blockSize)
        let old = blockBytes(blockSize, seed: 7, index: 0)
        try cache.write(key, block: 0, bytes: old)
        try cache.write(key, block: 1, bytes: old)
        var changed = key
        changed.entityTag = "\"v2\""
        #expect(cache.read(changed, block: 0) == nil)
        var resized = key
        resized.size += 1
        #expect(cache.read(resized, block: 0) == nil)
        // Another block size is another layout: a miss too.
        let otherLayout = BlockCache(folder: folder.path, sizeLimit: 1 << 20, blockSize: 2 * blockSize)
        #expect(otherLayout.read(key, block: 0) == nil)
        // Another server for the same URL: another object.
        var elsewhere = key
        elsewhere.serverOrigin = "https://mirror.example.com:443"
        #expect(cache.read(elsewhere, block: 0) == nil)

        // No ETag, or a weak one: nothing kept, nothing served.
        for tag in ["", "W/\"v1\""] {
            var weak = key
            weak.entityTag = tag
            #expect(!weak.isCacheable)
            #expect(throws: BlobStreamError.self) { try cache.write(weak, block: 0, bytes: old) }
            #expect(cache.read(weak, block: 0) == nil)
        }

        let new = blockBytes(blockSize, seed: 8, index: 0)
        try cache.write(changed, block: 0, bytes: new)
        #expect(cache.read(changed, block: 0) == new)
        #expect(cache.read(key, block: 0) == nil)
        #expect(cache.read(key, block: 1) == nil)
        #expect(cache.contents().objects.map(\.key) == [changed])
        #expect(cache.contents().totalBytes == Int64(64 + blockSize))

        try cache.write(elsewhere, block: 0, bytes: old)
        cache.dropObject(url: changed.url, serverOrigin: changed.serverOrigin)
        #expect(cache.read(changed, block: 0) == nil)
        #expect(cache.read(elsewhere, block: 0) == old)
        #expect(cache.contents().totalBytes == Int64(64 + blockSize))
    }

    @Test("8 threads with their own instances write and read the same blocks: only right bytes")
    func concurrentInstances() throws {
        let folder = TemporaryFolder()
        let fileSize = Int64(64 + blockSize)
        // Room for about half the blocks, so that evictions run while others read.
        let limit = 24 * fileSize
        let objects = (0..<3).map {
            BlockCache.ObjectKey(url: "https://example.com/shared/\($0)", entityTag: "e", size: 16 * Int64(blockSize))
        }
        let expected = objects.indices.map { object in
            (0..<16).map { blockBytes(blockSize, seed: 100 + UInt64(object), index: $0) }
        }
        final class Counts: @unchecked Sendable {
            let lock = NSLock()
            var hits = 0, wrong = 0, errors = 0
        }
        let counts = Counts()
        let group = DispatchGroup()
        for thread in 0..<8 {
            group.enter()
            Thread {
                let cache = BlockCache(folder: folder.path, sizeLimit: limit, blockSize: blockSize)
                var state = UInt64(thread + 1)
                var hits = 0
                var wrong = 0
                var errors = 0
                for _ in 0..<300 {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    let object = Int(state >> 40) % objects.count
                    let index = Int(state >> 20) % 16
                    if let bytes = cache.read(objects[object], block: index) {
                        hits += 1
                        if bytes != expected[object][index] { wrong += 1 }
                    } else {
                        do { try cache.write(objects[object], block: index, bytes: expected[object][index]) } catch {
                            errors += 1
                        }
                    }
                }
                counts.lock.lock()
                counts.hits += hits
                counts.wrong += wrong
                counts.errors += errors
                counts.lock.unlock()
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        #expect(counts.wrong == 0)
        #expect(counts.errors == 0)
        #expect(counts.hits > 0)
        let cache = BlockCache(folder: folder.path, sizeLimit: limit, blockSize: blockSize)
        #expect(cache.contents().totalBytes <= limit + 8 * fileSize)
        for object in objects.indices {
            for index in 0..<16 {
                if let bytes = cache.read(objects[object], block: index) { #expect(bytes == expected[object][index]) }
            }
        }
    }

    @Test("a temporary file a crashed writer left is never read and is cleaned up")
    func crashedWriter() throws {
        let folder = TemporaryFolder()
        let cache = BlockCache(folder: folder.path, sizeLimit: 1 << 20, blockSize: blockSize)
        let bytes = blockBytes(blockSize, seed: 9, index: 4)
        try cache.write(key, block: 0, bytes: bytes.map { $0 ^ 1 })
        // What a writer killed before its rename leaves: a named temporary file holding part
        // of a block (its header and half the payload), old enough to be stale.
        let name = BlockCache.blockName(4)
        let leftover = cache.objectFolder(key) + "/." + name + AtomicFileWrite.marker + "crashed"
        var whole = try Data(contentsOf: URL(fileURLWithPath: cache.blockPath(key, block: 0)))
        whole.removeLast(blockSize / 2)
        try whole.write(to: URL(fileURLWithPath: leftover))
        CacheFolderCalls.setTime(path: leftover, seconds: CacheFolderCalls.currentTime - 3600)
        #expect(cache.read(key, block: 4) == nil)
        #expect(cache.contents().totalBytes == Int64(64 + blockSize), "the leftover is not a block")
        // The block written whole is read; the leftover is not taken for it.
        try cache.write(key, block: 4, bytes: bytes)
        #expect(cache.read(key, block: 4) == bytes)
        // A fresh leftover (a writer maybe still at work) stays; a stale one goes at a prune,
        // and at an eviction.
        let fresh = cache.objectFolder(key) + "/." + BlockCache.blockName(6) + AtomicFileWrite.marker + "working"
        try whole.write(to: URL(fileURLWithPath: fresh))
        cache.prune(toBytes: 1 << 20)
        #expect(CacheFolderCalls.linkStatus(leftover) == nil)
        #expect(CacheFolderCalls.linkStatus(fresh) != nil)
        #expect(cache.read(key, block: 4) == bytes)
        #expect(cache.read(key, block: 6) == nil)
        CacheFolderCalls.setTime(path: fresh, seconds: CacheFolderCalls.currentTime - 3600)
        let small = BlockCache(folder: folder.path, sizeLimit: Int64(64 + blockSize), blockSize: blockSize)
        try small.write(key, block: 7, bytes: blockBytes(blockSize, seed: 9, index: 7))
        #expect(CacheFolderCalls.linkStatus(fresh) == nil)
    }

    @Test("a write that fails half-way (a full disk): a clear error, no part of the block visible")
    func fullDisk() throws {
        let folder = TemporaryFolder()
        var cache = BlockCache(folder: folder.path, sizeLimit: 1 << 20, blockSize: blockSize)
        let old = blockBytes(blockSize, seed: 10, index: 2)
        try cache.write(key, block: 2, bytes: old)
        let before = cache.contents()
        cache.failWritesAfterBytes = 64 + blockSize / 2
        for index in [2, 3] {
            do {
                try cache.write(key, block: index, bytes: blockBytes(blockSize, seed: 11, index: index))
                Issue.record("the write did not fail")
            } catch {
                #expect(error.code == .ioFailed)
                #expect(error.message.contains("No space left on device"), "\(error.message)")
                #expect(error.message.contains(folder.path), "\(error.message)")
            }
        }
        cache.failWritesAfterBytes = nil
        #expect(cache.read(key, block: 2) == old, "the block before stays")
        #expect(cache.read(key, block: 3) == nil)
        #expect(cache.contents() == before)
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.objectFolder(key)).sorted()
        #expect(names == [BlockCache.blockName(2), BlockCache.descriptionName], "no temporary file left")
    }

    @Test("the cache leaves files it did not name alone; a lock file replaced by a FIFO is made again")
    func foreignFiles() throws {
        let folder = TemporaryFolder()
        try Data([7]).write(to: URL(fileURLWithPath: folder.path + "/notes.txt"))
        #expect(mkfifo(folder.path + "/" + BlockCache.lockName, 0o600) == 0)
        let cache = BlockCache(folder: folder.path, sizeLimit: 1, blockSize: blockSize)
        let written = withinSeconds(5) {
            (try? cache.write(key, block: 0, bytes: blockBytes(blockSize, seed: 12, index: 0))) != nil
        }
        #expect(written == true)
        #expect(CacheFolderCalls.linkStatus(folder.path + "/" + BlockCache.lockName)?.kind == .regular)
        cache.prune(toBytes: 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder.path + "/notes.txt")) == Data([7]))
    }

    @Test("a writer held by a lock another process keeps gives its block up in time; readers never wait")
    func heldLock() throws {
        let folder = TemporaryFolder()
        var cache = BlockCache(folder: folder.path, sizeLimit: 1 << 20, blockSize: blockSize)
        cache.lockTimeout = 0.3
        let bytes = blockBytes(blockSize, seed: 13, index: 0)
        try cache.write(key, block: 0, bytes: bytes)
        // Another open of the lock file: flock excludes it as it would another process.
        let other = try CounterLockFile(path: folder.path + "/" + BlockCache.lockName)
        #expect(other.lock())
        let started = Date()
        #expect(throws: BlobStreamError.self) {
            try cache.write(key, block: 1, bytes: blockBytes(blockSize, seed: 13, index: 1))
        }
        #expect(Date().timeIntervalSince(started) < 5)
        let reader = cache
        #expect(withinSeconds(5) { reader.read(key, block: 0) } == .some(bytes))
        #expect(cache.read(key, block: 1) == nil)
        other.unlock()
        try cache.write(key, block: 1, bytes: blockBytes(blockSize, seed: 13, index: 1))
        #expect(cache.read(key, block: 1) == blockBytes(blockSize, seed: 13, index: 1))
        #expect(cache.contents().totalBytes == 2 * Int64(64 + blockSize))
    }

    @Test("the default folder is the XDG cache's blobstream/blocks")
    func defaultFolder() {
        let folder = BlockCache.defaultFolder
        #expect(folder == nil || folder!.hasSuffix("/blobstream/blocks"))
    }
}
