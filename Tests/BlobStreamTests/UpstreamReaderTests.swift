import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

/// An in-memory source that records the size of every read it was asked for.
private final class RecordingSource: BlobDataSource, @unchecked Sendable {
    let inner: InMemoryDataSource
    private let lock = NSLock()
    private var sizes: [Int] = []
    init(_ data: Data) { inner = InMemoryDataSource(data: data) }
    var state: BlobDataSourceState { inner.state }
    var length: Int64? { inner.length }
    var offsetCapability: BlobOffsetCapability { .seek }
    var readOffset: Int64? { inner.readOffset }
    func seek(to offset: Int64) throws(BlobStreamError) { try inner.seek(to: offset) }
    func open() { inner.open() }
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        lock.withLock { sizes.append(maxLength) }
        return inner.read(buffer, maxLength: maxLength)
    }
    func close() { inner.close() }
    var readSizes: [Int] { lock.withLock { sizes } }
}

@Suite("BlobUpstreamReader: the kit's upstream reader")
struct UpstreamReaderTests {
    static let bytes = sampleBytes(200_000, seed: 0x0B5)

    /// Everything `reader` hands out through fill/consume, in pieces of at most `piece`.
    static func drainFill(_ reader: BlobUpstreamReader, piece: Int, waiting: Bool = true) -> (
        Data, BlobUpstreamReader.Filled?
    ) {
        var out = Data()
        while true {
            let result = reader.fill(waiting: waiting)
            guard case .bytes(let bytes) = result else { return (out, result) }
            let n = min(piece, bytes.count)
            out.append(contentsOf: bytes.prefix(n))
            reader.consume(n)
        }
    }

    @Test("fill and consume hand out every byte, then the end; the upstream is closed with the reader")
    func fillAndConsume() throws {
        let source = InMemoryDataSource(data: Self.bytes, chunkSize: 3_333)
        let reader = BlobUpstreamReader(source, bufferSize: 10_000)
        try reader.waitForOpen()
        let (data, last) = Self.drainFill(reader, piece: 777)
        #expect(data == Self.bytes)
        if case .end = last {} else { Issue.record("ended with \(String(describing: last))") }
        #expect(reader.offset == 200_000 && reader.reachedEnd)
        reader.close()
        var byte: UInt8 = 0
        #expect(source.read(&byte, maxLength: 1) == -1, "closing the reader closes the upstream")
    }

    @Test("fill(atLeast:) gathers bytes across upstream reads")
    func atLeast() throws {
        let reader = BlobUpstreamReader(InMemoryDataSource(data: Self.bytes, chunkSize: 100), bufferSize: 4_096)
        try reader.waitForOpen()
        guard case .bytes(let first) = reader.fill(atLeast: 1_000, waiting: true) else {
            Issue.record("no bytes")
            return
        }
        #expect(first.count >= 1_000)
        #expect(Data(first.prefix(1_000)) == Self.bytes.prefix(1_000))
        reader.consume(999)
        guard case .bytes(let second) = reader.fill(atLeast: 4_096, waiting: true) else {
            Issue.record("no bytes")
            return
        }
        #expect(second.count == 4_096 && Data(second) == Self.bytes.subdata(in: 999..<5_095))
    }

    @Test("moves: within the buffer, by the upstream's seek, and by discarding over a forward-only one")
    func moves() throws {
        let seekable = RecordingSource(Self.bytes)
        let reader = BlobUpstreamReader(seekable, bufferSize: 8_192)
        try reader.waitForOpen()
        var buffer = [UInt8](repeating: 0, count: 100)
        _ = reader.read(into: &buffer, maxLength: 100, waiting: true)
        try reader.seek(to: 10) // back, inside the buffer: no upstream call
        #expect(seekable.inner.readOffset == 8_192)
        guard case .bytes(let n) = reader.read(into: &buffer, maxLength: 100, waiting: true) else { return }
        #expect(Data(buffer[0..<n]) == Self.bytes.subdata(in: 10..<10 + n))
        try reader.seek(to: 150_000) // far ahead: the upstream seeks
        #expect(seekable.inner.readOffset == 150_000)
        _ = reader.read(into: &buffer, maxLength: 100, waiting: true)
        #expect(Data(buffer) == Self.bytes.subdata(in: 150_000..<150_100))

        let forward = BlobUpstreamReader(ForwardOnlySource(Self.bytes), bufferSize: 8_192)
        try forward.waitForOpen()
        try forward.seek(to: 123_456)
        #expect(forward.offset == 123_456)
        _ = forward.read(into: &buffer, maxLength: 100, waiting: true)
        #expect(Data(buffer) == Self.bytes.subdata(in: 123_456..<123_556))
        #expect(throws: BlobStreamError.self) { try forward.seek(to: 0) }
        try forward.seek(to: 300_000)
        if case .end = forward.read(into: &buffer, maxLength: 100, waiting: true) {
        } else {
            Issue.record("a discard past the end did not end")
        }
        #expect(forward.offset == 200_000, "the offset says where the upstream ended")
    }

    @Test("read sizes start small after a move and double up to the buffer size")
    func adaptiveReadSizes() throws {
        let source = RecordingSource(Self.bytes)
        let reader = BlobUpstreamReader(source, bufferSize: 64 * 1024, minimumReadSize: 4_096)
        try reader.waitForOpen()
        _ = Self.drainFill(reader, piece: .max)
        #expect(Array(source.readSizes.prefix(5)) == [4_096, 8_192, 16_384, 32_768, 65_536])
    }

    @Test("over an asynchronous upstream: starved without waiting, then onChange; waiting gets every byte")
    func asynchronous() throws {
        let queue = DispatchQueue(label: "UpstreamReaderTests.async")
        let changes = ConcurrentLog<Int>()
        let source = InMemoryDataSource(
            data: Self.bytes, open: .async(queue: queue, delay: 0.05), chunkSize: 5_000, refillDelay: (queue, 0.001))
        let reader = BlobUpstreamReader(source, bufferSize: 16_384) { changes.add(1) }
        #expect(reader.isAsynchronous)
        reader.open()
        if case .starved = reader.fill() {} else { Issue.record("not starved before the open completed") }
        try reader.waitForOpen()
        #expect(!changes.all.isEmpty, "onChange was called")
        let (data, last) = Self.drainFill(reader, piece: 1_000, waiting: true)
        #expect(data == Self.bytes)
        if case .end = last {} else { Issue.record("ended with \(String(describing: last))") }
    }

    @Test("waiting on the upstream's own queue fails at once with .wouldDeadlock")
    func wouldDeadlock() throws {
        let queue = DispatchQueue(label: "UpstreamReaderTests.deadlock")
        let source = InMemoryDataSource(data: Self.bytes, chunkSize: 5_000, refillDelay: (queue, 0.5))
        let reader = BlobUpstreamReader(source)
        try reader.waitForOpen()
        var buffer = [UInt8](repeating: 0, count: 5_000)
        _ = reader.read(into: &buffer, maxLength: 5_000, waiting: true) // the next bytes come in 0.5 s
        let result = queue.sync { reader.read(into: &buffer, maxLength: 5_000, waiting: true) }
        guard case .failed(let error) = result else {
            Issue.record("got \(result)")
            return
        }
        #expect((error as? BlobStreamError)?.code == .wouldDeadlock)
    }

    @Test("cancel() from another thread ends a wait with .closed")
    func cancelEndsAWait() throws {
        let queue = DispatchQueue(label: "UpstreamReaderTests.cancel")
        let source = InMemoryDataSource(data: Self.bytes, chunkSize: 5_000, refillDelay: (queue, 30))
        let reader = BlobUpstreamReader(source)
        try reader.waitForOpen()
        var buffer = [UInt8](repeating: 0, count: 5_000)
        _ = reader.read(into: &buffer, maxLength: 5_000, waiting: true) // the next bytes come in 30 s
        let handoff = Handoff(value: reader)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { handoff.value.cancel() }
        let started = Date()
        let result = reader.read(into: &buffer, maxLength: 5_000, waiting: true)
        #expect(Date().timeIntervalSince(started) < 10)
        guard case .failed(let error) = result else {
            Issue.record("got \(result)")
            return
        }
        #expect((error as? BlobStreamError)?.code == .closed)
        if case .failed = reader.fill() {} else { Issue.record("the failure is not sticky") }
    }

    @Test("an upstream error is handed on as it is, and sticks")
    func upstreamError() throws {
        let reader = BlobUpstreamReader(InMemoryDataSource(data: Self.bytes, failAt: (50_000, SampleError(tag: "up"))))
        try reader.waitForOpen()
        let (data, last) = Self.drainFill(reader, piece: .max)
        #expect(data.count == 50_000)
        guard case .failed(let error) = last else {
            Issue.record("ended with \(String(describing: last))")
            return
        }
        #expect(error as? SampleError == SampleError(tag: "up"))
        #expect(reader.error as? SampleError == SampleError(tag: "up"))
    }
}
