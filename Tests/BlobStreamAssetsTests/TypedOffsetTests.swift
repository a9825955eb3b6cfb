import BlobStream
import BlobStreamAssets
import BlobStreamTestSupport
import Foundation
import Testing

/// AssetDataSource through the typed offset API only (`seek(to:)`, `readOffset`); the
/// `.fileCurrentOffsetKey` form is covered by AssetDataSourceTests ("offsets: before open,
/// after open across blocks…") and the conformance checks.
@Suite("Typed offsets of AssetDataSource")
struct AssetTypedOffsetTests {
    @Test("seek before open, after open (in and out of the cache), past the end, after close")
    func typedOffsets() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(300_001)
        let (disk, url) = try makeLibrary(dir, original: bytes)
        let library = CountingLibrary(disk)
        let source = AssetDataSource(url: url, library: library, blockSize: 65_536)
        #expect(source.readOffset == 0)
        try source.seek(to: 70_000)
        #expect(source.readOffset == 70_000)

        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        #expect(stream.streamStatus == .open)
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(stream.read(&buffer, maxLength: 100) == 100 && Data(buffer) == bytes.subdata(in: 70_000..<70_100))
        #expect(source.readOffset == 70_100)

        let before = source.statistics.getBytesCalls
        try stream.seek(to: 70_050) // within the cache
        #expect(source.statistics.getBytesCalls == before, "a move within the cache reads nothing")
        #expect(source.readOffset == 70_050)
        #expect(stream.read(&buffer, maxLength: 100) == 100 && Data(buffer) == bytes.subdata(in: 70_050..<70_150))

        try stream.seek(to: 10) // back, outside the cache
        #expect(stream.readOffset == 10)
        #expect(stream.read(&buffer, maxLength: 100) == 100 && Data(buffer) == bytes.subdata(in: 10..<110))

        let pastEnd = #expect(throws: BlobStreamError.self) { try source.seek(to: 300_002) }
        #expect(pastEnd?.code == .invalidOffset)
        #expect(pastEnd?.message == "offset 300002 is past the end of '\(url)' (300001 bytes)")
        #expect(source.readOffset == 110, "a refused move changes nothing")
        #expect(source.error == nil, "a refused move is not a failure of the source")
        let negative = #expect(throws: BlobStreamError.self) { try source.seek(to: -5) }
        #expect(negative?.code == .invalidOffset)
        #expect(negative?.message.contains(url) == true && negative?.message.contains("-5") == true)

        try stream.seek(to: 299_990)
        let (tail, last) = drain(stream)
        #expect(last == 0 && tail == bytes.suffix(11))
        #expect(source.readOffset == 300_001)
        stream.close()
        let closed = #expect(throws: BlobStreamError.self) { try source.seek(to: 0) }
        #expect(closed?.code == .closed)
        #expect(closed?.message.contains(url) == true)
    }

    @Test("an offset past the end set before open fails the open, naming the URL, offset and size")
    func pastEndBeforeOpen() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: sampleBytes(800))
        let source = AssetDataSource(url: url, library: library)
        try source.seek(to: 900) // the size is not known yet
        let (data, last, error) = readSynchronously(source)
        #expect(data.isEmpty && last == -1)
        #expect(cause(error)?.code == .invalidOffset)
        #expect(cause(error)?.message == "offset 900 is past the end of '\(url)' (800 bytes)")
        let afterFailure = #expect(throws: BlobStreamError.self) { try source.seek(to: 0) }
        #expect(afterFailure?.code == .closed || afterFailure?.code == .invalidOffset)
        #expect(afterFailure?.message.contains(url) == true)
    }
}
