import BlobStream
import BlobStreamAssets
import BlobStreamTestSupport
import Crypto
import Foundation
import Glibc
import SampleAssetLibrary
import Testing

@Suite("AssetDataSource")
struct AssetDataSourceTests {
    @Test("every sample asset, both modes: the default rendition's bytes; the original on request")
    func sampleLibrary() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        try DirectoryAssetLibrary.writeSampleLibrary(at: dir.url)
        let library = DirectoryAssetLibrary(root: dir.url)
        for entry in try library.assets() {
            let edited =
                entry.isEdited
                ? try Data(contentsOf: URL(fileURLWithPath: dir.path("renders/" + entry.relativePath))) : nil
            let original = try Data(contentsOf: URL(fileURLWithPath: dir.path("originals/" + entry.relativePath)))
            let expected = edited ?? original

            let source = AssetDataSource(url: entry.url, library: library)
            let sync = readSynchronously(source)
            #expect(sync.last == 0, "\(String(describing: sync.error))")
            #expect(sha(sync.data) == sha(expected), "\(entry.relativePath)")
            #expect(source.rendition == (entry.isEdited ? .edited : .original))
            #expect(source.length == entry.size)
            #expect(source.filename == (entry.relativePath as NSString).lastPathComponent)

            let async = AsynchronousRead(reading: AssetDataSource(url: entry.url, library: library))
            #expect(async.finished && async.error == nil)
            #expect(async.data == sync.data, "both modes read the same bytes: \(entry.relativePath)")

            let originalSource = AssetDataSource(url: entry.url, library: library, rendition: .original)
            let read = readSynchronously(originalSource)
            #expect(sha(read.data) == sha(original))
            #expect(originalSource.rendition == .original)
        }
    }

    @Test("asynchronous mode: hasBytesAvailable arrives right after openCompleted, then the end")
    func asyncEvents() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(300_001)
        let (library, url) = try makeLibrary(dir, original: bytes)
        let result = AsynchronousRead(reading: AssetDataSource(url: url, library: library, blockSize: 65_536))
        #expect(result.finished)
        #expect(result.error == nil)
        #expect(sha(result.data) == sha(bytes))
        #expect(Array(result.events.prefix(2)) == ["open", "bytes"], "\(result.events)")
        #expect(result.events.last == "end")
        #expect(!result.events.contains("error"))
    }

    struct ReadCase: CustomTestStringConvertible, Sendable {
        let readSize: Int, blockSize: Int, cachedBlocks: Int, assetSize: Int
        init(readSize: Int, blockSize: Int, cachedBlocks: Int = AssetDataSource.defaultCachedBlocks, assetSize: Int) {
            (self.readSize, self.blockSize, self.cachedBlocks, self.assetSize) = (
                readSize, blockSize, cachedBlocks, assetSize
            )
        }
        var testDescription: String {
            "\(readSize)-byte reads, \(blockSize)-byte blocks, \(cachedBlocks) cached, \(assetSize) bytes"
        }
    }

    @Test(
        "getBytes runs at most once per block whatever the read size",
        arguments: [
            ReadCase(readSize: 1, blockSize: 65_536, cachedBlocks: 1, assetSize: 300_001),
            ReadCase(readSize: 4_096, blockSize: 65_536, cachedBlocks: 1, assetSize: 300_001),
            ReadCase(readSize: 1 << 20, blockSize: 65_536, cachedBlocks: 1, assetSize: 300_001),
            ReadCase(readSize: 7_919, blockSize: 4_096, cachedBlocks: 3, assetSize: 300_001),
            ReadCase(readSize: 1, blockSize: AssetDataSource.defaultBlockSize, assetSize: 300_001),
            ReadCase(readSize: 4_096, blockSize: AssetDataSource.defaultBlockSize, assetSize: 3 << 20 | 77),
            ReadCase(readSize: 1 << 20, blockSize: AssetDataSource.defaultBlockSize, assetSize: 3 << 20 | 77),
            ReadCase(readSize: 65_536, blockSize: 65_536, cachedBlocks: 1, assetSize: 65_536 * 4),
            ReadCase(readSize: 100_000, blockSize: AssetDataSource.defaultBlockSize, assetSize: 3 << 20 | 77),
        ])
    func blockCache(c: ReadCase) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(c.assetSize)
        let (disk, url) = try makeLibrary(dir, original: bytes)
        let library = CountingLibrary(disk)
        let source = AssetDataSource(url: url, library: library, blockSize: c.blockSize, cachedBlocks: c.cachedBlocks)
        let read = readSynchronously(source, size: c.readSize)
        #expect(read.last == 0)
        #expect(sha(read.data) == sha(bytes))
        let blocks = (c.assetSize + c.blockSize - 1) / c.blockSize
        #expect(library.getBytesCalls <= blocks, "\(library.getBytesCalls) getBytes calls for \(blocks) blocks")
        #expect(source.statistics == .init(lookups: 1, getBytesCalls: library.getBytesCalls, invalidations: 0))
        #expect(library.lookups == 1)
        // Every byte is asked for once, in aligned pieces.
        let calls = library.calls
        #expect(
            calls.map(\.offset)
                == calls.indices.map { i in i == 0 ? 0 : calls[i - 1].offset + Int64(calls[i - 1].length) })
        #expect(calls.allSatisfy { $0.offset % Int64(c.blockSize) == 0 })
        #expect(calls.reduce(0) { $0 + $1.length } == c.assetSize)
    }

    @Test("reads with room for whole blocks get them straight into their buffer; smaller reads go through the cache")
    func wholeBlocksSkipTheCache() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let block = 65_536
        let bytes = sampleBytes(8 * block + 77)
        let (disk, url) = try makeLibrary(dir, original: bytes)

        // Reads of two blocks, a cache of two blocks.
        let library = CountingLibrary(disk)
        let stream = BlobInputStream(
            dataSource: AssetDataSource(url: url, library: library, blockSize: block, cachedBlocks: 2))
        stream.open()
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 2 * block)
        defer { buffer.deallocate() }
        var data = Data()
        while case let n = stream.read(buffer, maxLength: 2 * block), n > 0 {
            data.append(buffer, count: n)
        }
        stream.close()
        #expect(data == bytes)
        let calls = library.calls
        let here = UInt(bitPattern: buffer)
        // The open fills the cache; from the first block boundary on, every read is one
        // getBytes into the caller's buffer, the last one short.
        #expect(calls.map(\.offset) == [0, 2, 4, 6, 8].map { Int64($0 * block) })
        #expect(calls.map(\.length) == [2 * block, 2 * block, 2 * block, 2 * block, 77])
        #expect(calls.first?.destination != here)
        #expect(calls.dropFirst().allSatisfy { $0.destination == here }, "\(calls)")

        // Reads smaller than a block: getBytes fills the cache, two blocks at a time; only
        // the short last block fits a read's buffer.
        let small = CountingLibrary(disk)
        let read = readSynchronously(
            AssetDataSource(url: url, library: small, blockSize: block, cachedBlocks: 2), size: 4_096)
        #expect(read.data == bytes)
        #expect(small.calls.map(\.offset) == [0, 2, 4, 6, 8].map { Int64($0 * block) })
        #expect(Set(small.calls.dropLast().map(\.destination)).count == 1, "one cache")
        #expect(small.calls.last?.destination != small.calls.first?.destination)
    }

    @Test("a zero-length asset ends cleanly in both modes")
    func empty() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: Data())
        let source = AssetDataSource(url: url, library: library)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        #expect(stream.streamStatus == .atEnd)
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == 0)
        #expect(source.length == 0)
        stream.close()
        let async = AsynchronousRead(reading: AssetDataSource(url: url, library: library))
        #expect(async.finished && async.error == nil && async.data.isEmpty)
        #expect(async.events == ["open", "end"], "\(async.events)")
    }

    @Test("unknown id and missing library: the stream fails with an error naming the URL")
    func openErrors() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: sampleBytes(10))
        let unknown = AssetURL(id: "00000000-0000-0000-0000-000000000000", ext: "JPG").string
        let missing = DirectoryAssetLibrary(root: URL(fileURLWithPath: dir.path("nowhere")))
        for (lib, u) in [(library, unknown), (missing, url)] {
            let sync = readSynchronously(AssetDataSource(url: u, library: lib))
            #expect(sync.last == -1)
            #expect(cause(sync.error)?.code == .notFound, "\(String(describing: sync.error))")
            #expect(sync.error?.description.contains(u) == true, "\(String(describing: sync.error))")
            let async = AsynchronousRead(reading: AssetDataSource(url: u, library: lib))
            #expect(async.finished && async.events == ["error"], "\(async.events)")
            #expect(cause(async.error)?.code == .notFound)
        }
    }

    /// Opens a synchronous stream over `make()` on `queue`: the error code the open gave
    /// (`.some(nil)` for none), or nil when it had not returned after 10 s (a deadlock).
    static func synchronousOpen(
        on queue: DispatchQueue, _ make: @escaping @Sendable () -> any BlobDataSource
    ) -> BlobStreamError.Code?? {
        let done = DispatchSemaphore(value: 0)
        let code = TestBox<BlobStreamError.Code?>(nil)
        queue.async {
            let stream = BlobInputStream(dataSource: make())
            stream.open()
            code.value = (stream.streamError as? BlobStreamError)?.code
            stream.close()
            done.signal()
        }
        return done.wait(timeout: .now() + 10) == .success ? .some(code.value) : nil
    }

    @Test("a synchronous open on the library's callback queue fails at once, never deadlocks")
    func openOnCallbackQueue() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: sampleBytes(1000))
        let code = Self.synchronousOpen(on: library.callbackQueue) { AssetDataSource(url: url, library: library) }
        #expect(code != nil, "the open deadlocked")
        #expect(code == .wouldDeadlock)
    }

    @Test("with an openQueue: opening from another thread works; a synchronous open on it fails at once")
    func openQueue() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(100_000)
        let (library, url) = try makeLibrary(dir, original: bytes)
        let openQueue = DispatchQueue(label: "test.open")
        let read = readSynchronously(AssetDataSource(url: url, library: library, openQueue: openQueue))
        #expect(sha(read.data) == sha(bytes))
        let code = Self.synchronousOpen(on: openQueue) {
            AssetDataSource(url: url, library: library, openQueue: openQueue)
        }
        #expect(code != nil, "the open deadlocked")
        #expect(code == .wouldDeadlock)
    }

    @Test("offsets: before open, after open across blocks, the property reads back; past the end fails")
    func offsets() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(300_001)
        let (disk, url) = try makeLibrary(dir, original: bytes)
        let library = CountingLibrary(disk)
        for start in [0, 1, 65_535, 65_536, 200_000, 300_000, 300_001] {
            let stream = BlobInputStream(dataSource: AssetDataSource(url: url, library: library, blockSize: 65_536))
            #expect(stream.setProperty(NSNumber(value: start), forKey: .fileCurrentOffsetKey))
            stream.open()
            let (data, last) = drain(stream, size: 10_000)
            #expect(last == 0)
            #expect(data == bytes.subdata(in: start..<bytes.count), "from \(start)")
            stream.close()
        }
        let source = AssetDataSource(url: url, library: library, blockSize: 65_536)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(stream.read(&buffer, maxLength: 100) == 100)
        let before = source.statistics.getBytesCalls
        #expect(stream.setProperty(NSNumber(value: 50), forKey: .fileCurrentOffsetKey))
        #expect(source.statistics.getBytesCalls == before, "a move within the block reads nothing")
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == 50)
        #expect(stream.read(&buffer, maxLength: 100) == 100 && Data(buffer) == bytes.subdata(in: 50..<150))
        #expect(stream.setProperty(NSNumber(value: 250_000), forKey: .fileCurrentOffsetKey))
        #expect(!stream.setProperty(NSNumber(value: 300_002), forKey: .fileCurrentOffsetKey))
        let (rest, _) = drain(stream)
        #expect(rest == bytes.subdata(in: 250_000..<bytes.count))
        #expect(stream.setProperty(NSNumber(value: 299_999), forKey: .fileCurrentOffsetKey), "back from the end")
        let (tail, last) = drain(stream)
        #expect(tail == bytes.suffix(2) && last == 0)
        stream.close()

        let past = BlobInputStream(dataSource: AssetDataSource(url: url, library: library))
        #expect(past.setProperty(NSNumber(value: 300_002), forKey: .fileCurrentOffsetKey))
        past.open()
        #expect(past.streamStatus == .error)
        #expect(cause(past.streamError as? BlobStreamError)?.code == .invalidOffset)
    }

    @Test("the registry opens assets-library: URLs with the library it was given")
    func registry() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(5_000)
        let (library, url) = try makeLibrary(dir, original: bytes, edited: sampleBytes(6_000, seed: 3))
        let registry = DataSourceRegistry()
        AssetSources.register(in: registry, library: library)
        #expect(registry.handles(scheme: "assets-library"))
        let stream = try BlobInputStream(url: url, registry: registry)
        stream.open()
        #expect(drain(stream).0 == sampleBytes(6_000, seed: 3))
        #expect((stream.dataSource as? AssetDataSource)?.rendition == .edited)
        let originals = DataSourceRegistry()
        AssetSources.register(in: originals, library: library, rendition: .original)
        let original = try BlobInputStream(url: url, registry: originals)
        original.open()
        #expect(drain(original).0 == bytes)
        let error = #expect(throws: BlobStreamError.self) {
            try registry.makeSource(url: "assets-library://asset/asset.JPG")
        }
        #expect(error?.code == .malformedURL)
    }

    @Test("the conformance checks pass", arguments: [0, 1, 200_003])
    func conformance(size: Int) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(size)
        let (library, url) = try makeLibrary(dir, original: bytes)
        let unknown = AssetURL(id: "0", ext: "JPG").string
        let findings = SourceConformance.check(
            expected: bytes,
            failing: { AssetDataSource(url: unknown, library: library) },
            makeSource: { AssetDataSource(url: url, library: library, blockSize: 65_536) })
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("the conformance checks pass with invalidations at open and at block boundaries")
    func conformanceWithInvalidations() throws {
        let bytes = sampleBytes(200_003)
        let findings = SourceConformance.check(expected: bytes) {
            let library = TestLibrary()
            let url = library.add(id: "X", original: bytes)
            library.invalidate(atOffsets: [0, 65_536, 131_072, 131_072])
            return AssetDataSource(url: url, library: library, blockSize: 65_536)
        }
        #expect(findings.isEmpty, "\(findings)")
    }
}
