import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

/// An in-memory source with a check point every `checkEvery` bytes, as a gzip index has one
/// per chunk: the bytes before a check point are "checked" once a read passed it, and the
/// check at `badCheckPoint` (if any) fails there, as a CRC-32 mismatch would.
final class CheckedSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: `inner` is thread-safe; `checked` and `failed` are touched by the
    // owner's calls only (one at a time).
    let inner: InMemoryDataSource
    let checkEvery: Int
    let badCheckPoint: Int?
    private(set) var checked: Int64 = 0

    init(_ data: Data, checkEvery: Int, badCheckPoint: Int? = nil) {
        inner = InMemoryDataSource(data: data, chunkSize: 1_000)
        self.checkEvery = checkEvery
        self.badCheckPoint = badCheckPoint
    }

    var state: BlobDataSourceState { inner.state }
    var length: Int64? { inner.length }
    var offsetCapability: BlobOffsetCapability { .seek }
    var readOffset: Int64? { inner.readOffset }
    var verifiedPrefix: BlobVerifiedPrefix { .checked(upTo: checked) }
    var readCount: Int { inner.readCount }
    func seek(to offset: Int64) throws(BlobStreamError) { try inner.seek(to: offset) }
    func open() { inner.open() }
    func close() { inner.close() }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let n = inner.read(buffer, maxLength: maxLength)
        guard n >= 0, let position = inner.readOffset else { return n }
        let size = Int64(inner.length ?? 0)
        let point = position == size ? size : position / Int64(checkEvery) * Int64(checkEvery)
        if let bad = badCheckPoint, point >= Int64(bad), checked < Int64(bad) {
            state.error = BlobStreamError(.corrupt, "the check at offset \(bad) failed")
            return -1
        }
        if point > checked { checked = point }
        return n
    }
}

@Suite("Verified prefixes: reading on to the next check point")
struct VerifiedPrefixTests {
    static let bytes = sampleBytes(100_000, seed: 0xC4EC)

    /// Reads `count` bytes of `stream` (or to its end); the bytes and the stream's error.
    static func take(_ stream: BlobInputStream, _ count: Int) -> (Data, Int) {
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while out.count < count {
            let n = stream.read(&buffer, maxLength: min(buffer.count, count - out.count))
            if n <= 0 { return (out, n) }
            out.append(contentsOf: buffer[0..<n])
        }
        return (out, 1)
    }

    @Test("a slice of a checked source ends only after the check point after its range")
    func sliceReadsOnToTheCheckPoint() throws {
        let source = CheckedSource(Self.bytes, checkEvery: 30_000)
        let slice = BlobSliceDataSource(upstream: source, offset: 5_000, length: 10_000)
        let stream = BlobInputStream(dataSource: slice)
        stream.open()
        let (data, last) = Self.take(stream, .max)
        #expect(last == 0 && data == Self.bytes.subdata(in: 5_000..<15_000))
        #expect(source.checked >= 30_000, "the slice ended before the check point at 30000")
        #expect(slice.verifiedPrefix == .checked(upTo: 10_000))
        stream.close()
    }

    @Test("a slice whose next check point fails ends in that error, not in a clean end")
    func sliceFailsAtABadCheckPoint() throws {
        let source = CheckedSource(Self.bytes, checkEvery: 30_000, badCheckPoint: 30_000)
        let slice = BlobSliceDataSource(upstream: source, offset: 5_000, length: 10_000)
        let stream = BlobInputStream(dataSource: slice)
        stream.open()
        let (data, last) = Self.take(stream, .max)
        #expect(data.count <= 10_000 && last == -1)
        #expect((stream.streamError as? BlobStreamError)?.message.contains("the check at offset 30000 failed") == true)
        stream.close()
        // Unverified, it ends at its range with the bytes (which nothing checked).
        let preview = BlobSliceDataSource(
            upstream: CheckedSource(Self.bytes, checkEvery: 30_000, badCheckPoint: 30_000), offset: 5_000,
            length: 10_000, verification: .unverified)
        let previewStream = BlobInputStream(dataSource: preview)
        previewStream.open()
        let (previewData, previewLast) = Self.take(previewStream, .max)
        #expect(previewLast == 0 && previewData == Self.bytes.subdata(in: 5_000..<15_000))
        #expect(preview.verifiedPrefix == .nothingToCheck)
        previewStream.close()
    }

    @Test("a slice of a source with nothing to check reads nothing past its range")
    func sliceOfAPlainSourceStopsAtItsRange() throws {
        let source = InMemoryDataSource(data: Self.bytes, chunkSize: 1_000)
        let slice = BlobSliceDataSource(upstream: source, offset: 5_000, length: 10_000)
        let stream = BlobInputStream(dataSource: slice)
        stream.open()
        let (data, last) = Self.take(stream, .max)
        #expect(last == 0 && data == Self.bytes.subdata(in: 5_000..<15_000))
        #expect(
            (source.readOffset ?? 0) <= 15_000 + 16 * 1024,
            "read on past the range: \(String(describing: source.readOffset))")
        #expect(slice.verifiedPrefix == .nothingToCheck)
        stream.close()
    }

    @Test("readOnToCheckPoint: covers what was read, throws the failed check, returns at once with nothing to check")
    func streamReadsOn() throws {
        let good = BlobInputStream(dataSource: CheckedSource(Self.bytes, checkEvery: 25_000))
        good.open()
        #expect(Self.take(good, 1_234).0 == Self.bytes.prefix(1_234))
        #expect(!good.verifiedPrefix.covers(1_234))
        try good.readOnToCheckPoint()
        #expect(good.verifiedPrefix.covers(1_234) && (good.readOffset ?? 0) >= 25_000)
        good.close()

        let bad = BlobInputStream(dataSource: CheckedSource(Self.bytes, checkEvery: 25_000, badCheckPoint: 50_000))
        bad.open()
        _ = Self.take(bad, 30_000)
        #expect(throws: BlobStreamError.self) { try bad.readOnToCheckPoint() }
        bad.close()

        let plain = InMemoryDataSource(data: Self.bytes, chunkSize: 1_000)
        let stream = BlobInputStream(dataSource: plain)
        stream.open()
        _ = Self.take(stream, 1_000)
        try stream.readOnToCheckPoint()
        #expect(stream.readOffset == 1_000)
        stream.close()
    }

    @Test("a concatenation: nothing to check when no part checks; a checked part's checks shifted by its start")
    func concatenation() throws {
        let plain = ConcatenatedDataSource([
            .init(InMemoryDataSource(data: Self.bytes.prefix(1_000))), .init(InMemoryDataSource(data: Self.bytes)),
        ])
        #expect(plain.verifiedPrefix == .nothingToCheck)
        let mixed = ConcatenatedDataSource([
            .init(InMemoryDataSource(data: Self.bytes.prefix(1_000))),
            .init(CheckedSource(Self.bytes, checkEvery: 25_000), declaredLength: Int64(Self.bytes.count)),
        ])
        let stream = BlobInputStream(dataSource: mixed)
        stream.open()
        #expect(Self.take(stream, 11_000).0.count == 11_000)
        #expect(!stream.verifiedPrefix.covers(11_000))
        try stream.readOnToCheckPoint()
        #expect(stream.verifiedPrefix.covers(11_000))
        stream.close()
    }
}
