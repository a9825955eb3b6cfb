import BlobStream
import BlobStreamAssets
import BlobStreamTestSupport
import Crypto
import Foundation
import Glibc
import Testing

@Suite("Invalidation")
struct InvalidationTests {
    /// The block, and the cache: one block, so that every block boundary asks `getBytes`.
    static let block = 65_536
    /// Four full blocks and a short one.
    static let bytes = sampleBytes(4 * 65_536 + 1_234)

    enum Mode: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case synchronous, asynchronous
        var testDescription: String { rawValue }
    }

    /// Reads `source` in `mode` with `size`-byte reads; `progress` runs after each read.
    static func read(_ source: AssetDataSource, _ mode: Mode, size: Int = 10_000, nextSize: (@Sendable (Int) -> Int)? = nil,
                     progress: @escaping @Sendable (Int) -> Void = { _ in }) -> (data: Data, error: BlobStreamError?, clean: Bool) {
        switch mode {
        case .synchronous:
            let r = readSynchronously(source, size: size, nextSize: nextSize, progress: progress)
            return (r.data, r.error, r.last == 0)
        case .asynchronous:
            let r = AsynchronousRead(reading: source, size: size, nextSize: nextSize, progress: progress)
            return (r.data, r.error, r.finished && r.error == nil && r.events.last == "end")
        }
    }

    @Test("getBytes invalidated at open and at block boundaries: the exact bytes, both modes",
          arguments: Mode.allCases, [[0], [65_536], [0, 65_536, 131_072, 262_144], [131_072, 131_072, 131_072]] as [[Int64]])
    func atBlockBoundaries(mode: Mode, offsets: [Int64]) {
        let library = TestLibrary()
        let url = library.add(id: "A", original: Self.bytes)
        library.invalidate(atOffsets: offsets)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let r = Self.read(source, mode)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(Self.bytes))
        #expect(source.statistics.lookups == 1 + offsets.count)
        #expect(source.statistics.invalidations == offsets.count)
    }

    @Test("getBytes into the caller's buffer invalidated (at a read's start, twice in a row, the short last block): the exact bytes, both modes",
          arguments: Mode.allCases)
    func wholeBlockReads(mode: Mode) {
        let library = TestLibrary()
        let url = library.add(id: "A", original: Self.bytes)
        let offsets: [Int64] = [65_536, 131_072, 131_072, 262_144]
        library.invalidate(atOffsets: offsets)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        // Block-sized reads: from the second block on, each starts on a boundary with room
        // for the block, so the invalidation comes before any byte of the read.
        let r = Self.read(source, mode, size: Self.block)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(Self.bytes))
        #expect(source.statistics.lookups == 1 + offsets.count)
        #expect(source.statistics.invalidations == offsets.count)
    }

    @Test("the library invalidated after N bytes were read (mid-block, at and around boundaries, last byte): the exact bytes",
          arguments: Mode.allCases, [1, 65_535, 65_536, 65_537, 200_000, 4 * 65_536, 4 * 65_536 + 1_233])
    func afterBytes(mode: Mode, after: Int) {
        let library = TestLibrary()
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let fired = TestBox(false)
        // Reads that stop exactly at the point, then a 1-byte read, then larger ones.
        let r = Self.read(source, mode, size: 7_919, nextSize: { total in total < after ? after - total : total == after ? 1 : 7_919 }) { total in
            if total == after, !fired.value {
                fired.value = true
                library.invalidateAll()
            }
        }
        #expect(fired.value)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(Self.bytes))
        // Seen by the next getBytes, unless the cache already held the last byte.
        let expectRelookup = after <= Self.bytes.count - (Self.bytes.count % Self.block)
        #expect(source.statistics.lookups == (expectRelookup ? 2 : 1))
    }

    @Test("a move to another block right after an invalidation looks up again and reads from there")
    func seekAfterInvalidation() {
        let library = TestLibrary()
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(stream.read(&buffer, maxLength: 100) == 100)
        library.invalidateAll()
        #expect(stream.setProperty(NSNumber(value: 200_000), forKey: .fileCurrentOffsetKey))
        let (rest, last) = drain(stream)
        #expect(last == 0)
        #expect(rest == Self.bytes.subdata(in: 200_000..<Self.bytes.count))
        #expect(source.statistics.lookups == 2)
        stream.close()
    }

    @Test("content changed mid-read (other bytes, other size, rendition removed, asset removed): a .changed error naming the URL",
          arguments: Mode.allCases, ["bytes", "size", "rendition", "removed"])
    func contentChanged(mode: Mode, change: String) {
        let library = TestLibrary()
        let edited = sampleBytes(Self.bytes.count, seed: 77)
        let url = library.add(id: "A", original: Self.bytes, edited: change == "rendition" ? edited : nil)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let fired = TestBox(false)
        let r = Self.read(source, mode, progress: { total in
            guard total >= 100_000, !fired.value else { return }
            fired.value = true
            switch change {
            case "bytes": library.replace(id: "A", original: sampleBytes(Self.bytes.count, seed: 5))
            case "size": library.replace(id: "A", original: Self.bytes + Data([1]))
            case "rendition": library.replace(id: "A", original: Self.bytes, edited: nil)
            default: library.replace(id: "A", original: nil)
            }
        })
        #expect(!r.clean)
        #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
        #expect(r.error?.description.contains(url) == true)
        #expect(r.data.count < Self.bytes.count)
        #expect(r.data == Self.bytes.prefix(r.data.count) || change == "rendition", "what was read is a prefix of one version")
    }

    @Test("a library that invalidates forever: an error, not a hang", arguments: Mode.allCases)
    func forever(mode: Mode) {
        let library = TestLibrary()
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let fired = TestBox(false)
        let r = Self.read(source, mode, progress: { total in
            if !fired.value { fired.value = true; library.invalidateForever() }
        })
        #expect(!r.clean)
        #expect(cause(r.error)?.code == .invalidated, "\(String(describing: r.error))")
        #expect(r.data == Self.bytes.prefix(r.data.count))
    }

    // MARK: - On disk

    enum DiskChange: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case addAnotherFile, touchAnotherFile, rewriteSameBytes, rewriteInPlaceSameBytes
        var testDescription: String { rawValue }
    }

    @Test("the library really changed on disk mid-read: looked up again, the exact bytes",
          arguments: Mode.allCases, DiskChange.allCases)
    func onDisk(mode: Mode, change: DiskChange) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        try dir.file("originals/OTHER.JPG", sampleBytes(100))
        let (library, url) = try makeLibrary(dir, original: Self.bytes)
        #expect(library.isWatching)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let fired = TestBox(false), sawGeneration = TestBox(true)
        let r = Self.read(source, mode, progress: { total in
            guard total >= 100_000, !fired.value else { return }
            fired.value = true
            let before = library.generation
            do {
                switch change {
                case .addAnotherFile: try dir.file("originals/NEW.JPG", sampleBytes(10))
                case .touchAnotherFile: _ = utimensat(AT_FDCWD, dir.path("originals/OTHER.JPG"), nil, 0)
                case .rewriteSameBytes: try dir.replace("originals/IMG_0001.JPG", Self.bytes)
                case .rewriteInPlaceSameBytes: try dir.file("originals/IMG_0001.JPG", Self.bytes)
                }
            } catch {
                Issue.record("changing the library failed: \(error)")
            }
            // Another file's change is seen through inotify: wait until it arrived.
            sawGeneration.value = waitUntil { library.generation > before }
        })
        #expect(fired.value && sawGeneration.value)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(Self.bytes))
        #expect(source.statistics.lookups >= 2)
        #expect(source.statistics.invalidations >= 1)
    }

    @Test("the asset rewritten on disk with other bytes, or removed, mid-read: a .changed error naming the URL",
          arguments: Mode.allCases, [true, false])
    func onDiskChanged(mode: Mode, remove: Bool) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let fired = TestBox(false)
        let r = Self.read(source, mode, progress: { total in
            guard total >= 100_000, !fired.value else { return }
            fired.value = true
            if remove {
                unlink(dir.path("originals/IMG_0001.JPG"))
            } else {
                var other = Self.bytes
                other[10] ^= 0xFF  // same size, one byte different
                try? dir.replace("originals/IMG_0001.JPG", other)
            }
        })
        #expect(!r.clean)
        #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
        #expect(r.error?.description.contains(url) == true, "\(String(describing: r.error))")
        #expect(r.data == Self.bytes.prefix(r.data.count))
    }
}
