import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

/// An upstream that can only be read from its start: no offsets at all (a pipe whose owner
/// gives no way to move), over an in-memory source read in uneven chunks.
final class ForwardOnlySource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: `inner` is thread-safe; the rest is immutable.
    let inner: InMemoryDataSource
    init(_ data: Data, chunkSize: Int = 5_000) { inner = InMemoryDataSource(data: data, chunkSize: chunkSize) }
    var state: BlobDataSourceState { inner.state }
    var length: Int64? { nil }
    var offsetCapability: BlobOffsetCapability { .none }
    func open() { inner.open() }
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int { inner.read(buffer, maxLength: maxLength) }
    func close() { inner.close() }
}

@Suite("BlobSliceDataSource: a byte range of any source")
struct SliceTests {
    static let bytes = sampleBytes(300_000, seed: 0x511CE)

    /// (offset, length) pairs: empty, whole, at both ends, unaligned, across chunk borders.
    static let ranges: [(Int, Int)] = [
        (0, 0), (0, 300_000), (0, 1), (299_999, 1), (300_000, 0), (1, 4_999), (4_999, 2), (123_457, 100_003),
        (65_536, 65_536), (250_000, 50_000),
    ]

    enum Upstream: String, CaseIterable, Sendable {
        case seekable, forwardOnly
        func make(_ data: Data) -> any BlobDataSource {
            switch self {
            case .seekable: InMemoryDataSource(data: data, chunkSize: 7_777)
            case .forwardOnly: ForwardOnlySource(data)
            }
        }
    }

    @Test("the bytes of slices at many offsets and lengths", arguments: Upstream.allCases)
    func slices(upstream: Upstream) {
        for (offset, length) in Self.ranges {
            let slice = BlobSliceDataSource(
                upstream: upstream.make(Self.bytes), offset: Int64(offset), length: Int64(length))
            #expect(slice.length == Int64(length))
            let stream = BlobInputStream(dataSource: slice)
            stream.open()
            let (data, last) = drain(stream, size: 4_096)
            let expected = Self.bytes.subdata(in: offset..<offset + length)
            #expect(last == 0, "\(upstream) \(offset)+\(length): \(String(describing: stream.streamError))")
            #expect(digest(data) == digest(expected) && data.count == length, "\(upstream) \(offset)+\(length)")
        }
    }

    @Test("a slice to the upstream's end", arguments: Upstream.allCases)
    func toTheEnd(upstream: Upstream) {
        let slice = BlobSliceDataSource(upstream: upstream.make(Self.bytes), offset: 100_000, length: nil)
        let stream = BlobInputStream(dataSource: slice)
        stream.open()
        let (data, last) = drain(stream, size: 65_536)
        #expect(last == 0)
        #expect(digest(data) == digest(Self.bytes.subdata(in: 100_000..<300_000)))
    }

    @Test("a slice past the upstream's end is .truncated, never a short clean end", arguments: Upstream.allCases)
    func pastTheEnd(upstream: Upstream) {
        for (offset, length): (Int64, Int64?) in [(299_000, 2_000), (300_001, 10), (400_000, nil), (0, 300_001)] {
            let slice = BlobSliceDataSource(upstream: upstream.make(Self.bytes), offset: offset, length: length)
            let stream = BlobInputStream(dataSource: slice)
            stream.open()
            let (data, last) = drain(stream, size: 65_536)
            let error = stream.streamError as? BlobStreamError
            let code = (error?.cause as? BlobStreamError)?.code ?? error?.code
            #expect(last == -1, "\(upstream) \(offset)+\(String(describing: length)) ended cleanly")
            #expect(code == .truncated, "\(upstream) \(offset): \(String(describing: error))")
            #expect(data.count == max(0, min(300_000 - Int(offset), Int(length ?? 0))))
        }
    }

    @Test("offsets move within the range, before and after open", arguments: Upstream.allCases)
    func offsets(upstream: Upstream) throws {
        let slice = BlobSliceDataSource(upstream: upstream.make(Self.bytes), offset: 10_000, length: 200_000)
        let stream = BlobInputStream(dataSource: slice)
        try stream.seek(to: 50_000)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 1_000)
        #expect(stream.read(&buffer, maxLength: 1_000) == 1_000)
        #expect(Data(buffer) == Self.bytes.subdata(in: 60_000..<61_000))
        #expect(stream.readOffset == 51_000)
        try stream.seek(to: 150_000) // forward: a seek, or reading and discarding
        let (rest, last) = drain(stream, size: 65_536)
        #expect(last == 0 && rest == Self.bytes.subdata(in: 160_000..<210_000))
        #expect(throws: BlobStreamError.self) { try stream.seek(to: 200_001) }
        if upstream == .seekable {
            try stream.seek(to: 5)
            #expect(stream.read(&buffer, maxLength: 10) == 10)
            #expect(Data(buffer[0..<10]) == Self.bytes.subdata(in: 10_005..<10_015))
        } else {
            #expect(slice.offsetCapability == .readAndDiscard)
            #expect(throws: BlobStreamError.self) { try stream.seek(to: 5) }
        }
    }

    @Test("asynchronous mode over an asynchronous upstream")
    func asynchronous() {
        let queue = DispatchQueue(label: "SliceTests.upstream")
        let upstream = InMemoryDataSource(
            data: Self.bytes, open: .async(queue: queue, delay: 0.01), chunkSize: 3_000,
            refillDelay: (queue, 0.0005))
        let slice = BlobSliceDataSource(upstream: upstream, offset: 1_234, length: 77_777)
        let result = AsynchronousRead(reading: slice, size: 4_096)
        #expect(result.finished && result.error == nil, "\(String(describing: result.error))")
        #expect(result.data == Self.bytes.subdata(in: 1_234..<79_011))
        #expect(result.events.first == "open" && result.events.last == "end")
    }

    @Test("a synchronous read over an asynchronous upstream waits for it")
    func synchronousOverAsynchronous() {
        let queue = DispatchQueue(label: "SliceTests.upstream.sync")
        let upstream = InMemoryDataSource(
            data: Self.bytes, open: .async(queue: queue, delay: 0.01), chunkSize: 3_000,
            refillDelay: (queue, 0.0005))
        let stream = BlobInputStream(
            dataSource: BlobSliceDataSource(upstream: upstream, offset: 50_000, length: 20_000))
        stream.open()
        let (data, last) = drain(stream, size: 1_000)
        #expect(last == 0 && data == Self.bytes.subdata(in: 50_000..<70_000))
    }

    @Test("the upstream's error is handed on as it is")
    func upstreamError() {
        let upstream = InMemoryDataSource(data: Self.bytes, failAt: (20_000, SampleError(tag: "slice")))
        let stream = BlobInputStream(
            dataSource: BlobSliceDataSource(upstream: upstream, offset: 10_000, length: 50_000))
        stream.open()
        let (data, last) = drain(stream, size: 4_096)
        #expect(last == -1 && data.count == 10_000)
        #expect((stream.streamError as? BlobStreamError)?.cause as? SampleError == SampleError(tag: "slice"))
    }

    @Test("the conformance check passes over both kinds of upstream", arguments: Upstream.allCases)
    func conformance(upstream: Upstream) {
        let bytes = Self.bytes
        let findings = SourceConformance.check(expected: bytes.subdata(in: 5_000..<205_000)) {
            BlobSliceDataSource(upstream: upstream.make(bytes), offset: 5_000, length: 200_000)
        }
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("a move past the end of a range that runs to an unknown end fails at the read that finds it")
    func pastAnUnknownEnd() throws {
        let slice = BlobSliceDataSource(upstream: ForwardOnlySource(Self.bytes), offset: 100_000, length: nil)
        #expect(slice.length == nil)
        let stream = BlobInputStream(dataSource: slice)
        stream.open()
        try stream.seek(to: 250_000)
        let (data, last) = drain(stream, size: 65_536)
        let error = (stream.streamError as? BlobStreamError)?.cause as? BlobStreamError
        #expect(last == -1 && data.isEmpty)
        #expect(error?.code == .invalidOffset, "\(String(describing: error))")
    }
}
