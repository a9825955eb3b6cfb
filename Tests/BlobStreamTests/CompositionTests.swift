import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("DataBytesSource and ConcatenatedDataSource")
struct CompositionTests {
    @Test("DataBytesSource passes the conformance check", arguments: [0, 1, 70_000])
    func dataBytesConforms(size: Int) {
        let bytes = sampleBytes(size)
        let findings = SourceConformance.check(expected: bytes) { DataBytesSource(bytes) }
        #expect(findings.isEmpty, "\(findings)")
    }

    static func parts(queue: DispatchQueue?) -> (Data, @Sendable () -> ConcatenatedDataSource) {
        let a = sampleBytes(10_000, seed: 1)
        let b = sampleBytes(0)
        let c = sampleBytes(33_333, seed: 3)
        let d = Data("--end--".utf8)
        let make: @Sendable () -> ConcatenatedDataSource = {
            let middle: any BlobDataSource =
                queue.map {
                    InMemoryDataSource(
                        data: c, open: .async(queue: $0, delay: 0.005), chunkSize: 5000, refillDelay: ($0, 0))
                } ?? InMemoryDataSource(data: c, chunkSize: 5000)
            return ConcatenatedDataSource([
                .init(DataBytesSource(a)), .init(DataBytesSource(b)), .init(middle), .init(DataBytesSource(d)),
            ])
        }
        return (a + b + c + d, make)
    }

    @Test("parts one after another, with the total length known up front")
    func concatenation() {
        let (expected, make) = Self.parts(queue: nil)
        let source = make()
        #expect(source.length == Int64(expected.count))
        let findings = SourceConformance.check(expected: expected) { make() }
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("a part that opens later on a queue: the stream waits instead of ending")
    func asyncPart() {
        let queue = DispatchQueue(label: "late-part")
        let (expected, make) = Self.parts(queue: queue)
        for readSize in [1000, 65_536] {
            let stream = BlobInputStream(dataSource: make())
            stream.open()
            let (data, last) = drain(stream, size: readSize)
            #expect(last == 0, "\(String(describing: stream.streamError))")
            #expect(digest(data) == digest(expected))
            #expect(data.count == expected.count)
        }
    }

    @Test("a failing part fails the whole, never a short clean end")
    func failingPart() throws {
        let source = ConcatenatedDataSource([
            .init(DataBytesSource(Data("head".utf8))),
            .init(InMemoryDataSource(data: sampleBytes(1000), failAt: (600, SampleError(tag: "part")))),
            .init(DataBytesSource(Data("tail".utf8))),
        ])
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let (data, last) = drain(stream, size: 256)
        #expect(last == -1)
        #expect(data.count == 604)
        let error = try #require(stream.streamError as? BlobStreamError)
        #expect(error.cause as? SampleError == SampleError(tag: "part"))
    }

    @Test("a forward offset reads and discards across parts")
    func forwardOffset() {
        let (expected, make) = Self.parts(queue: DispatchQueue(label: "offset-part"))
        let stream = BlobInputStream(dataSource: make())
        #expect(stream.setProperty(NSNumber(value: 12_345), forKey: .fileCurrentOffsetKey))
        stream.open()
        let (data, last) = drain(stream, size: 4096)
        #expect(last == 0)
        #expect(data == expected.suffix(from: 12_345))
    }
}

/// Rule 2's "nothing yet", racing its own re-announcement: every `quietEvery`-th read drops
/// `hasBytesAvailable`, has it announced true again from another queue (as a lookup that
/// answers at once would), waits until it was, and only then returns 0. A stream that reads
/// the state after the 0 sees bytes available, not a quiet source.
final class QuietThenBackSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: `position` and `reads` are touched only by the owner's calls.
    let state = BlobDataSourceState()
    let data: Data
    let quietEvery: Int
    private let queue = DispatchQueue(label: "QuietThenBackSource")
    private var position = 0
    private var reads = 0
    /// With `slowObserver`: signalled by an observer of the source's own that runs before the
    /// stream's, once `hasBytesAvailable` is true again but before the stream is told.
    private let seenBack = DispatchSemaphore(value: 0)
    private var slowObservation: BlobObservation?

    /// - Parameter slowObserver: `read` returns its 0 as soon as the renewed
    ///   `hasBytesAvailable` can be seen, while the stream's own observer has not run yet
    ///   (an observer registered first holds it back 50 ms): the widest window between a
    ///   value and its announcement.
    init(_ data: Data, quietEvery: Int, slowObserver: Bool = false) {
        self.data = data
        self.quietEvery = quietEvery
        if slowObserver {
            slowObservation = state.observe(.hasBytesAvailable) { [seenBack] change in
                guard change.newValue == true else { return }
                seenBack.signal()
                Thread.sleep(forTimeInterval: 0.05) // the point: hold the stream's observer back
            }
        }
    }

    var length: Int64? { Int64(data.count) }
    var offsetCapability: BlobOffsetCapability { .none }
    var completionContext: BlobCompletionContext { .queue(queue) }

    func open() {
        state.isOpenCompleted = true
        if data.isEmpty { state.isAtEnd = true } else { state.hasBytesAvailable = true }
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard position < data.count else { return 0 }
        reads += 1
        if reads % quietEvery == 0 {
            state.hasBytesAvailable = false
            let back = DispatchSemaphore(value: 0)
            let slow = slowObservation != nil
            queue.async {
                self.state.hasBytesAvailable = true
                if !slow { back.signal() }
            }
            (slow ? seenBack : back).wait()
            return 0
        }
        let n = min(maxLength, data.count - position, 1_000)
        data.withUnsafeBytes {
            buffer.update(from: $0.baseAddress!.assumingMemoryBound(to: UInt8.self) + position, count: n)
        }
        position += n
        if position == data.count { state.isAtEnd = true }
        return n
    }

    func property(forKey key: Stream.PropertyKey) -> Any? { nil }
    func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool { false }
    func close() {}
}

@Suite("Nothing yet")
struct NothingYetTests {
    @Test(
        "a read of 0 that went quiet is not the end, even when bytes were announced again before it returned",
        arguments: [false, true])
    func quietThenBack(asynchronous: Bool) {
        readsWhole(QuietThenBackSource(sampleBytes(25_000), quietEvery: 3), asynchronous: asynchronous)
    }

    @Test(
        "a read of 0 that went quiet is not the end, even when the renewed bytes are seen before they are announced",
        arguments: [false, true])
    func quietThenSeenBeforeAnnounced(asynchronous: Bool) {
        readsWhole(
            QuietThenBackSource(sampleBytes(25_000), quietEvery: 3, slowObserver: true), asynchronous: asynchronous)
    }

    private func readsWhole(_ source: QuietThenBackSource, asynchronous: Bool) {
        let bytes = source.data
        if asynchronous {
            let r = AsynchronousRead(reading: source, size: 4_096)
            #expect(r.error == nil)
            #expect(r.last == 0)
            #expect(r.data == bytes)
        } else {
            let stream = BlobInputStream(dataSource: source, mode: .synchronous)
            stream.open()
            let (data, last) = stream.readToEnd(chunkSize: 4_096)
            #expect(last == 0)
            #expect(data == bytes)
            stream.close()
        }
    }
}
