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
    static func read(
        _ source: AssetDataSource, _ mode: Mode, size: Int = 10_000, nextSize: (@Sendable (Int) -> Int)? = nil,
        progress: @escaping @Sendable (Int) -> Void = { _ in }
    ) -> (data: Data, error: BlobStreamError?, clean: Bool) {
        switch mode {
        case .synchronous:
            let r = readSynchronously(source, size: size, nextSize: nextSize, progress: progress)
            return (r.data, r.error, r.last == 0)
        case .asynchronous:
            let r = AsynchronousRead(reading: source, size: size, nextSize: nextSize, progress: progress)
            return (r.data, r.error, r.finished && r.error == nil && r.events.last == "end")
        }
    }

    /// Reads `source` in `mode` with `size`-byte reads; after the first read that makes
    /// `when(total)` true, runs `change` (an error it throws is recorded) and, `watching` a
    /// library on disk, waits until that library saw a change. Returns the read, whether
    /// `change` ran, and whether the library saw it (false when not `watching`).
    static func readChanging(
        _ source: AssetDataSource, _ mode: Mode, size: Int = 10_000,
        when: @escaping @Sendable (Int) -> Bool = { total in total >= 100_000 },
        watching library: DirectoryAssetLibrary? = nil, change: @escaping @Sendable () throws -> Void
    ) -> (r: (data: Data, error: BlobStreamError?, clean: Bool), fired: Bool, sawGeneration: Bool) {
        let fired = TestBox(false)
        let sawGeneration = TestBox(false)
        let r = Self.read(
            source, mode, size: size,
            progress: { total in
                guard when(total), !fired.value else { return }
                fired.value = true
                let before = library?.generation
                do { try change() } catch { Issue.record("changing the asset failed: \(error)") }
                if let library, let before {
                    sawGeneration.value = waitUntil { library.generation > before }
                    // One change can bring several inotify events (write, close, the times set
                    // back), drained apart under load: let them all arrive before reading on,
                    // so that the count of lookups is the one the change makes.
                    var seen = library.generation
                    while waitUntil(timeout: 0.2, { library.generation != seen }) { seen = library.generation }
                }
            })
        return (r, fired.value, sawGeneration.value)
    }

    @Test(
        "getBytes invalidated at open and at block boundaries: the exact bytes, both modes",
        arguments: Mode.allCases,
        [[0], [65_536], [0, 65_536, 131_072, 262_144], [131_072, 131_072, 131_072]] as [[Int64]])
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

    @Test(
        "getBytes into the caller's buffer invalidated (at a read's start, twice in a row, the short last block): the exact bytes, both modes",
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

    @Test(
        "the library invalidated after N bytes were read (mid-block, at and around boundaries, last byte): the exact bytes",
        arguments: Mode.allCases, [1, 65_535, 65_536, 65_537, 200_000, 4 * 65_536, 4 * 65_536 + 1_233])
    func afterBytes(mode: Mode, after: Int) {
        let library = TestLibrary()
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let fired = TestBox(false)
        // Reads that stop exactly at the point, then a 1-byte read, then larger ones.
        let r = Self.read(
            source, mode, size: 7_919, nextSize: { total in total < after ? after - total : total == after ? 1 : 7_919 }
        ) { total in
            if total == after, !fired.value {
                fired.value = true
                library.invalidateAll()
            }
        }
        #expect(fired.value)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(Self.bytes))
        // Seen by the next getBytes or, when the cache held the rest, by the check before
        // the end.
        #expect(source.statistics.lookups == 2)
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

    @Test(
        "content changed mid-read (other bytes, other size, rendition removed, asset removed): a .changed error naming the URL",
        arguments: Mode.allCases, ["bytes", "size", "rendition", "removed"])
    func contentChanged(mode: Mode, change: String) {
        let library = TestLibrary()
        let edited = sampleBytes(Self.bytes.count, seed: 77)
        let url = library.add(id: "A", original: Self.bytes, edited: change == "rendition" ? edited : nil)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let (r, _, _) = Self.readChanging(source, mode) {
            switch change {
            case "bytes": library.replace(id: "A", original: sampleBytes(Self.bytes.count, seed: 5))
            case "size": library.replace(id: "A", original: Self.bytes + Data([1]))
            case "rendition": library.replace(id: "A", original: Self.bytes, edited: nil)
            default: library.replace(id: "A", original: nil)
            }
        }
        #expect(!r.clean)
        #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
        #expect(r.error?.description.contains(url) == true)
        #expect(r.data.count < Self.bytes.count)
        #expect(
            r.data == Self.bytes.prefix(r.data.count) || change == "rendition",
            "what was read is a prefix of one version")
    }

    @Test("a library that invalidates forever: an error, not a hang", arguments: Mode.allCases)
    func forever(mode: Mode) {
        let library = TestLibrary()
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let fired = TestBox(false)
        let r = Self.read(
            source, mode,
            progress: { total in
                if !fired.value {
                    fired.value = true
                    library.invalidateForever()
                }
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

    @Test(
        "the library really changed on disk mid-read: looked up again, the exact bytes",
        arguments: Mode.allCases, DiskChange.allCases)
    func onDisk(mode: Mode, change: DiskChange) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        try dir.file("originals/OTHER.JPG", sampleBytes(100))
        let (library, url) = try makeLibrary(dir, original: Self.bytes)
        #expect(library.isWatching)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        // Another file's change is seen through inotify: wait until it arrived.
        let (r, fired, sawGeneration) = Self.readChanging(source, mode, watching: library) {
            switch change {
            case .addAnotherFile: try dir.file("originals/NEW.JPG", sampleBytes(10))
            case .touchAnotherFile: _ = utimensat(AT_FDCWD, dir.path("originals/OTHER.JPG"), nil, 0)
            case .rewriteSameBytes: try dir.replace("originals/IMG_0001.JPG", Self.bytes)
            case .rewriteInPlaceSameBytes: try dir.file("originals/IMG_0001.JPG", Self.bytes)
            }
        }
        #expect(fired && sawGeneration)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(Self.bytes))
        #expect(source.statistics.lookups >= 2)
        #expect(source.statistics.invalidations >= 1)
    }

    @Test(
        "the asset rewritten on disk with other bytes, or removed, mid-read: a .changed error naming the URL",
        arguments: Mode.allCases, [true, false])
    func onDiskChanged(mode: Mode, remove: Bool) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let (r, _, _) = Self.readChanging(source, mode) {
            if remove {
                unlink(dir.path("originals/IMG_0001.JPG"))
            } else {
                var other = Self.bytes
                other[10] ^= 0xFF // same size, one byte different
                try? dir.replace("originals/IMG_0001.JPG", other)
            }
        }
        #expect(!r.clean)
        #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
        #expect(r.error?.description.contains(url) == true, "\(String(describing: r.error))")
        #expect(r.data == Self.bytes.prefix(r.data.count))
    }

    // MARK: - What was read belongs to the version resumed in

    /// `bytes` with the bytes at `offsets` flipped: same size.
    static func flipped(_ bytes: Data, at offsets: [Int]) -> Data {
        var other = bytes
        for i in offsets { other[i] ^= 0xFF }
        return other
    }

    @Test(
        "same size and a fingerprint that cannot tell, a byte already read changed: a .changed error naming the URL and offset, not a splice",
        arguments: Mode.allCases)
    func samePrintReadBytesChanged(mode: Mode) {
        let library = TestLibrary(sizeOnlyFingerprints: true)
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let (r, fired, _) = Self.readChanging(source, mode) {
            // One byte already read, one not yet: the old code handed out a mix of both.
            library.replace(id: "A", original: Self.flipped(Self.bytes, at: [50_000, 200_000]))
        }
        #expect(fired)
        #expect(!r.clean)
        #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
        let message = cause(r.error)?.message ?? ""
        #expect(message.contains(url) && message.contains("at offset 131072"), "\(message)")
        #expect(r.data.count < Self.bytes.count)
        #expect(r.data == Self.bytes.prefix(r.data.count), "what was read is a prefix of the first version")
        #expect(source.statistics.recheckedBytes > 0)
    }

    @Test(
        "same size and a fingerprint that cannot tell, only bytes not read yet changed: goes on, the bytes of the new version",
        arguments: Mode.allCases)
    func samePrintUnreadBytesChanged(mode: Mode) {
        let library = TestLibrary(sizeOnlyFingerprints: true)
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let other = Self.flipped(Self.bytes, at: [140_000, 263_000])
        let (r, fired, _) = Self.readChanging(source, mode) { library.replace(id: "A", original: other) }
        #expect(fired)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(other))
        // Resumed at 131,072 (the next block): everything before it was read again.
        #expect(source.statistics.recheckedBytes == 131_072)
        #expect(source.statistics.lookups == 2)
    }

    @Test("bytes read before a move with .fileCurrentOffsetKey are checked too: changed there, a .changed error")
    func changedBeforeMove() {
        let library = TestLibrary(sizeOnlyFingerprints: true)
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(stream.read(&buffer, maxLength: 100) == 100)
        #expect(stream.setProperty(NSNumber(value: 200_000), forKey: .fileCurrentOffsetKey))
        #expect(stream.read(&buffer, maxLength: 100) == 100)
        #expect(Data(buffer) == Self.bytes.subdata(in: 200_000..<200_100))
        library.replace(id: "A", original: Self.flipped(Self.bytes, at: [50]))
        let (rest, last) = drain(stream)
        #expect(last == -1)
        let error = cause(stream.streamError as? BlobStreamError)
        #expect(error?.code == .changed, "\(String(describing: error))")
        #expect(error?.message.contains("from offset 0 to 100") == true, "\(String(describing: error))")
        #expect(Self.bytes.subdata(in: 200_100..<(200_100 + rest.count)) == rest)
        stream.close()
    }

    @Test(
        "a sweep of same-size changes (fingerprint blind) at 48 places, after 48 amounts read: every outcome is a .changed error or one version's bytes, never a splice",
        arguments: Mode.allCases)
    func sameSizeSweep(mode: Mode) {
        var seed: UInt64 = 0x5EED
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        var outcomes = (errors: 0, newVersion: 0, wrong: 0)
        for _ in 0..<48 {
            let changeAt = next(Self.bytes.count)
            let trigger = 1 + next(Self.bytes.count - 1)
            let other = Self.flipped(Self.bytes, at: [changeAt])
            let library = TestLibrary(sizeOnlyFingerprints: true)
            let url = library.add(id: "A", original: Self.bytes)
            let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
            let (r, _, _) = Self.readChanging(source, mode, size: 7_919, when: { total in total >= trigger }) {
                library.replace(id: "A", original: other)
            }
            if !r.clean, cause(r.error)?.code == .changed, r.data == Self.bytes.prefix(r.data.count) {
                outcomes.errors += 1
                // Only a change among the bytes already handed out is an error.
                #expect(changeAt < r.data.count, "change at \(changeAt), \(r.data.count) bytes read")
            } else if r.clean, r.data == other {
                outcomes.newVersion += 1
            } else {
                // A clean end with the first version's bytes is wrong too: the change was
                // made before the end was collected (the check before the end sees it).
                outcomes.wrong += 1
                Issue.record(
                    "change at \(changeAt), trigger \(trigger): \(r.data.count) bytes, clean \(r.clean), \(String(describing: r.error))"
                )
            }
        }
        #expect(outcomes.wrong == 0)
        #expect(outcomes.errors > 0 && outcomes.newVersion > 0, "\(outcomes)")
    }

    @Test("close() during the re-read of what was handed out returns after one more block, not after the whole re-read")
    func closeDuringRecheck() {
        let library = TestLibrary()
        let bytes = sampleBytes(64 * Self.block)
        let url = library.add(id: "A", original: bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        source.open()
        var buffer = [UInt8](repeating: 0, count: Self.block)
        var read = Data()
        while read.count < 48 * Self.block {
            guard waitUntil({ source.hasBytesAvailable || source.error != nil }), source.error == nil else { break }
            let n = source.read(&buffer, maxLength: buffer.count)
            guard n > 0 else { break }
            read.append(buffer, count: n)
        }
        #expect(read == bytes.prefix(48 * Self.block))
        // Re-reading 48 blocks now takes about 48 × 30 ms.
        library.slowDown(30_000)
        library.invalidateAll()
        #expect(source.read(&buffer, maxLength: buffer.count) == 0, "nothing until looked up again")
        #expect(waitUntil { source.statistics.recheckedBytes > 0 }, "the re-read started")
        let start = Date()
        source.close()
        let took = Date().timeIntervalSince(start)
        #expect(took < 0.6, "close() took \(took) s")
        let rechecked = source.statistics.recheckedBytes
        #expect(rechecked < 48 * Self.block)
        // The sleep is the point: no event stands for "nothing more happens"; a re-read that
        // went on would add a 30 ms block within it.
        usleep(100_000)
        #expect(source.statistics.recheckedBytes == rechecked, "the re-read stopped")
        #expect(!source.hasBytesAvailable && source.error == nil)
    }

    enum SameStampChange: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case inPlace, replacedByRename
        var testDescription: String { rawValue }
    }

    /// Writes `other` (of the same size) over the file `name` — in place, the bytes at
    /// `offsets`, or as a copy renamed over it — then gives it back its modification time,
    /// as `touch -r` does; returns whether size and mtime are as before.
    static func rewriteKeepingStamp(
        _ dir: TempDir, _ name: String, _ other: Data, at offsets: [Int], _ how: SameStampChange
    ) throws -> Bool {
        let path = dir.path(name)
        var before = stat()
        guard stat(path, &before) == 0 else { throw TestFailure("stat \(path): errno \(errno)") }
        switch how {
        case .inPlace:
            let fd = open(path, O_WRONLY)
            guard fd >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
            defer { close(fd) }
            for i in offsets {
                var byte = other[i]
                guard pwrite(fd, &byte, 1, off_t(i)) == 1 else { throw TestFailure("pwrite: errno \(errno)") }
            }
        case .replacedByRename:
            try dir.replace(name, other)
        }
        var times = [before.st_atim, before.st_mtim]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw TestFailure("utimensat: errno \(errno)") }
        var after = stat()
        guard stat(path, &after) == 0 else { throw TestFailure("stat \(path): errno \(errno)") }
        return after.st_size == before.st_size && after.st_mtim.tv_sec == before.st_mtim.tv_sec
            && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec
    }

    /// `readChanging` from `library` (on disk in `dir`), the change being its original
    /// rewritten to `other` at `offsets` keeping size and mtime (`rewriteKeepingStamp`);
    /// `ok` is whether the rewrite was made, kept the stamp and was seen by the library.
    static func readRewritingKeepingStamp(
        _ source: AssetDataSource, _ mode: Mode, _ dir: TempDir, _ library: DirectoryAssetLibrary, size: Int = 10_000,
        when: @escaping @Sendable (Int) -> Bool = { total in total >= 100_000 },
        to other: Data, at offsets: [Int], _ how: SameStampChange
    ) -> (r: (data: Data, error: BlobStreamError?, clean: Bool), ok: Bool) {
        let kept = TestBox(false)
        let (r, fired, sawGeneration) = Self.readChanging(source, mode, size: size, when: when, watching: library) {
            kept.value = try Self.rewriteKeepingStamp(dir, "originals/IMG_0001.JPG", other, at: offsets, how)
        }
        return (r, fired && kept.value && sawGeneration)
    }

    @Test(
        "on disk, rewritten mid-read keeping size and mtime (touch -r), a byte already read changed: a .changed error, not a splice",
        arguments: Mode.allCases, SameStampChange.allCases)
    func onDiskSameStampReadBytesChanged(mode: Mode, how: SameStampChange) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: Self.bytes)
        // 70,000 and 180,000 are outside the bytes the library's fingerprint samples (the
        // first, middle and last 64 KiB): only the content check can see them.
        let offsets = [70_000, 180_000]
        let printBefore = try library.asset(for: url).original.fingerprint
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let (r, ok) = Self.readRewritingKeepingStamp(
            source, mode, dir, library, to: Self.flipped(Self.bytes, at: offsets), at: offsets, how)
        #expect(ok)
        #expect(try library.asset(for: url).original.fingerprint == printBefore, "the fingerprint cannot tell")
        #expect(!r.clean)
        #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
        let message = cause(r.error)?.message ?? ""
        #expect(message.contains(url) && message.contains("at offset 131072"), "\(message)")
        #expect(r.data == Self.bytes.prefix(r.data.count), "what was read is a prefix of the first version")
    }

    @Test(
        "on disk, rewritten mid-read keeping size and mtime, only bytes not read yet changed: goes on, the bytes of the new version",
        arguments: Mode.allCases, SameStampChange.allCases)
    func onDiskSameStampUnreadBytesChanged(mode: Mode, how: SameStampChange) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: Self.bytes)
        // 180,000 unsampled, 250,000 in the last 64 KiB: the fingerprint changes.
        let offsets = [180_000, 250_000]
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let (r, ok) = Self.readRewritingKeepingStamp(
            source, mode, dir, library, to: Self.flipped(Self.bytes, at: offsets), at: offsets, how)
        #expect(ok)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(Self.flipped(Self.bytes, at: offsets)))
        #expect(source.statistics.recheckedBytes >= 131_072)
    }

    @Test(
        "on disk, rewritten mid-read with the same bytes keeping size and mtime: goes on, the exact bytes",
        arguments: Mode.allCases, SameStampChange.allCases)
    func onDiskSameStampSameBytes(mode: Mode, how: SameStampChange) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        // The same bytes written again, read and not yet read.
        let (r, ok) = Self.readRewritingKeepingStamp(
            source, mode, dir, library, to: Self.bytes, at: [70_000, 180_000], how)
        #expect(ok)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(Self.bytes))
        #expect(source.statistics.lookups >= 2)
        #expect(source.statistics.recheckedBytes >= 100_000)
    }

    // MARK: - A change after the last getBytes

    /// After the read that fetched the last block (at 262,144) and before the end is collected.
    static let afterLastBlock: @Sendable (Int) -> Bool = { total in
        total > Self.bytes.count - Self.bytes.count % Self.block && total < Self.bytes.count
    }

    @Test(
        "on disk, rewritten keeping size and mtime after the last getBytes, before the end is collected: a .changed error, not a clean end",
        arguments: Mode.allCases, SameStampChange.allCases)
    func onDiskChangedAfterLastBlock(mode: Mode, how: SameStampChange) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: Self.bytes)
        let offsets = [70_000, 180_000] // outside the fingerprint's samples
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let (r, ok) = Self.readRewritingKeepingStamp(
            source, mode, dir, library, size: 1_000, when: Self.afterLastBlock,
            to: Self.flipped(Self.bytes, at: offsets), at: offsets, how)
        #expect(ok)
        #expect(!r.clean, "the change was made before the end was collected")
        #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
        let message = cause(r.error)?.message ?? ""
        #expect(message.contains(url) && message.contains("at offset \(Self.bytes.count)"), "\(message)")
        #expect(r.data == Self.bytes, "every byte handed out is of the first version")
        #expect(source.statistics.recheckedBytes == Self.bytes.count)
    }

    @Test(
        "on disk, unchanged or rewritten with the same bytes keeping size and mtime after the last getBytes: a clean end, the exact bytes",
        arguments: Mode.allCases, [false, true])
    func onDiskSameAfterLastBlock(mode: Mode, rewrite: Bool) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (disk, url) = try makeLibrary(dir, original: Self.bytes)
        let library = CountingLibrary(disk)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let kept = TestBox(true)
        let (r, fired, sawGeneration) = Self.readChanging(
            source, mode, size: 1_000, when: Self.afterLastBlock, watching: disk
        ) {
            if rewrite {
                kept.value = try Self.rewriteKeepingStamp(
                    dir, "originals/IMG_0001.JPG", Self.bytes, at: [70_000], .inPlace)
            }
        }
        #expect(fired && kept.value && sawGeneration == rewrite)
        #expect(r.clean, "\(String(describing: r.error))")
        #expect(sha(r.data) == sha(Self.bytes))
        #expect(source.statistics.lookups == (rewrite ? 2 : 1))
        #expect(source.statistics.recheckedBytes == (rewrite ? Self.bytes.count : 0))
        // The check before the end is no getBytes: one per block, and the re-read.
        let blocks = (Self.bytes.count + Self.block - 1) / Self.block
        #expect(library.getBytesCalls == blocks * (rewrite ? 2 : 1), "\(library.calls)")
    }

    @Test(
        "a library whose representations use the default checkValid(): changed after the last getBytes, a .changed error; unchanged, a clean end",
        arguments: Mode.allCases, [false, true])
    func defaultCheckAfterLastBlock(mode: Mode, change: Bool) {
        let library = TestLibrary(sizeOnlyFingerprints: true)
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(url: url, library: library, blockSize: Self.block, cachedBlocks: 1)
        let (r, fired, _) = Self.readChanging(source, mode, size: 1_000, when: Self.afterLastBlock) {
            if change { library.replace(id: "A", original: Self.flipped(Self.bytes, at: [5])) }
        }
        #expect(fired)
        #expect(r.data == Self.bytes)
        if change {
            #expect(!r.clean)
            #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
        } else {
            #expect(r.clean, "\(String(describing: r.error))")
            #expect(source.statistics.lookups == 1)
        }
    }

    // MARK: - Opting out

    @Test(
        "verifiesDeliveredBytes: same size and a fingerprint that cannot tell, a byte already read changed: true gives .changed; false hashes and re-reads nothing and splices (what the option gives up)",
        arguments: Mode.allCases, [true, false])
    func optOut(mode: Mode, verifies: Bool) {
        let library = TestLibrary(sizeOnlyFingerprints: true)
        let url = library.add(id: "A", original: Self.bytes)
        let source = AssetDataSource(
            url: url, library: library, blockSize: Self.block, cachedBlocks: 1, verifiesDeliveredBytes: verifies)
        #expect(source.verifiesDeliveredBytes == verifies)
        let other = Self.flipped(Self.bytes, at: [50_000, 200_000])
        let (r, fired, _) = Self.readChanging(source, mode) { library.replace(id: "A", original: other) }
        #expect(fired)
        #expect(source.statistics.lookups == 2)
        if verifies {
            #expect(!r.clean)
            #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
            #expect(source.statistics.recheckedBytes == 131_072)
        } else {
            #expect(r.clean, "\(String(describing: r.error))")
            #expect(source.statistics.recheckedBytes == 0)
            // Resumed at 131,072: the first version before, the second after.
            #expect(r.data == Self.bytes.prefix(131_072) + other.suffix(from: 131_072))
            #expect(r.data != Self.bytes && r.data != other)
        }
    }

    @Test(
        "verifiesDeliveredBytes false: a change the fingerprint sees is still a .changed error naming the fingerprints",
        arguments: Mode.allCases)
    func optOutFingerprintChanged(mode: Mode) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: Self.bytes)
        let source = AssetDataSource(
            url: url, library: library, blockSize: Self.block, cachedBlocks: 1, verifiesDeliveredBytes: false)
        let kept = TestBox(false)
        let (r, fired, sawGeneration) = Self.readChanging(source, mode, watching: library) {
            // 10 is in the first 64 KiB, which the fingerprint hashes.
            kept.value =
                (try? Self.rewriteKeepingStamp(
                    dir, "originals/IMG_0001.JPG", Self.flipped(Self.bytes, at: [10]), at: [10], .inPlace)) ?? false
        }
        #expect(fired && kept.value && sawGeneration)
        #expect(!r.clean)
        #expect(cause(r.error)?.code == .changed, "\(String(describing: r.error))")
        let message = cause(r.error)?.message ?? ""
        #expect(message.contains(url) && message.contains("fingerprint"), "\(message)")
        #expect(r.data == Self.bytes.prefix(r.data.count))
        #expect(source.statistics.recheckedBytes == 0)
    }
}
