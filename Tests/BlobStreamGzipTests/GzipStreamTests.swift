import BlobStream
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// An upstream that records whether it was closed.
private final class ClosingProbe: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: `closed` is written by the owner's serialized calls only.
    let inner: InMemoryDataSource
    var closed = false
    init(_ data: Data) { inner = InMemoryDataSource(data: data) }
    var state: BlobDataSourceState { inner.state }
    var offsetCapability: BlobOffsetCapability { inner.offsetCapability }
    func open() { inner.open() }
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int { inner.read(buffer, maxLength: maxLength) }
    func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        inner.setProperty(property, forKey: key)
    }
    func close() {
        closed = true
        inner.close()
    }
}

@Suite("Streams and upstreams")
struct GzipStreamTests {
    static let input = textBytes(200_000, seed: 30) + randomBytes(50_000, seed: 31)
    static let gz = try! Gzip.compress(input) + Gzip.compress(Data("tail member\n".utf8))
    static let expected = input + Data("tail member\n".utf8)

    @Test("gzip over a pipe fed by a writer thread")
    func overPipe() throws {
        #expect(try Gzip.decompress(Self.gz) == Self.expected)
        let source = GzipDataSource(
            upstream: PipeReadSource(fileDescriptor: pipeFeeding(Self.gz, chunk: 1000)), name: "pipe.gz")
        let result = drainSync(source)
        #expect(result.last == 0, "\(String(describing: result.error))")
        #expect(sha256(result.data) == sha256(Self.expected))
    }

    @Test("a truncated stream over a pipe is .truncated")
    func truncatedOverPipe() {
        let source = GzipDataSource(
            upstream: PipeReadSource(fileDescriptor: pipeFeeding(Self.gz.prefix(Self.gz.count / 2))))
        let result = drainSync(source)
        #expect(result.last == -1)
        #expect(result.error?.code == .truncated)
    }

    @Test("asynchronous stream mode over a synchronous upstream")
    func asyncMode() {
        let result = AsynchronousRead(reading: gzipSource(Self.gz))
        #expect(result.last == 0, "events: \(result.events)")
        #expect(result.events.first == "open")
        #expect(result.events.last == "end")
        #expect(sha256(result.data) == sha256(Self.expected))
    }

    @Test("asynchronous stream mode reports a corrupt stream as one error event")
    func asyncModeError() {
        var bad = Self.gz
        bad[bad.count / 3] ^= 0x55
        let result = AsynchronousRead(reading: gzipSource(bad))
        #expect(result.last == -1, "events: \(result.events)")
        #expect(result.events.filter { $0 == "error" }.count == 1)
        #expect(!result.events.contains("end"))
        #expect(result.sourceError?.code == .corrupt)
    }

    /// An upstream that opens later on a queue and hands out a few bytes at a time, each
    /// batch announced later from that queue (as a network source would).
    static func slowUpstream(_ data: Data, chunk: Int = 777) -> InMemoryDataSource {
        let queue = DispatchQueue(label: "slow-upstream")
        return InMemoryDataSource(
            data: data, open: .async(queue: queue, delay: 0.01), chunkSize: chunk,
            refillDelay: (queue: queue, delay: 0.0001))
    }

    @Test("over an asynchronous upstream: open completes when the upstream's does; sync mode")
    func asyncUpstreamSync() {
        let source = GzipDataSource(upstream: Self.slowUpstream(Self.gz), name: "slow.gz")
        if case .caller = source.completionContext { Issue.record("completionContext must not be .caller") }
        let result = drainSync(source)
        #expect(result.last == 0, "\(String(describing: result.error))")
        #expect(sha256(result.data) == sha256(Self.expected))
    }

    @Test("over an asynchronous upstream with 3-byte batches, async stream mode")
    func asyncUpstreamAsync() {
        let small = textBytes(20_000, seed: 32)
        let gz = try! Gzip.compress(small)
        let result = AsynchronousRead(reading: GzipDataSource(upstream: Self.slowUpstream(gz, chunk: 3)))
        #expect(result.last == 0, "events: \(result.events.suffix(5))")
        #expect(result.data == small)
        #expect(result.events.first == "open")
    }

    @Test("over an asynchronous upstream: truncation, corruption and offsets")
    func asyncUpstreamErrorsAndOffsets() {
        let truncated = drainSync(GzipDataSource(upstream: Self.slowUpstream(Self.gz.prefix(5000))))
        #expect(truncated.last == -1)
        #expect(truncated.error?.code == .truncated)
        let empty = drainSync(GzipDataSource(upstream: Self.slowUpstream(Data())))
        #expect(empty.last == -1)
        #expect(empty.error?.code == .truncated)
        let from = drainSync(GzipDataSource(upstream: Self.slowUpstream(Self.gz, chunk: 5000)), offset: 190_000)
        #expect(from.last == 0)
        #expect(from.data == Self.expected.suffix(from: 190_000))
    }

    @Test("closing the gzip source closes its upstream")
    func closeClosesUpstream() {
        let upstream = ClosingProbe(Self.gz)
        let stream = BlobInputStream(dataSource: GzipDataSource(upstream: upstream))
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 10)
        #expect(stream.read(&buffer, maxLength: 10) == 10)
        #expect(!upstream.closed)
        stream.close()
        #expect(upstream.closed)
    }

    @Test("SourceConformance finds nothing: synchronous upstream, with a failing variant")
    func conformance() {
        let gz = Self.gz
        let expected = Self.expected
        let failing: @Sendable () -> any BlobDataSource = {
            var bad = gz
            bad[bad.count - 20] ^= 1 // CRC-32 of the first member... or its body: corrupt either way
            return GzipDataSource(upstream: InMemoryDataSource(data: bad))
        }
        let findings = SourceConformance.check(expected: expected, failing: failing) {
            GzipDataSource(upstream: InMemoryDataSource(data: gz))
        }
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("SourceConformance finds nothing: empty payload, one byte")
    func conformanceSmall() throws {
        for payload in [Data(), Data([7])] {
            let gz = try Gzip.compress(payload)
            let findings = SourceConformance.check(expected: payload) {
                GzipDataSource(upstream: InMemoryDataSource(data: gz))
            }
            #expect(findings.isEmpty, "payload of \(payload.count) bytes: \(findings)")
        }
    }

    @Test("SourceConformance finds nothing: asynchronous upstream, with a truncated variant")
    func conformanceAsyncUpstream() {
        let small = textBytes(30_000, seed: 33)
        let gz = try! Gzip.compress(small)
        let findings = SourceConformance.check(
            expected: small, failing: { GzipDataSource(upstream: Self.slowUpstream(gz.prefix(gz.count - 3))) }
        ) {
            GzipDataSource(upstream: Self.slowUpstream(gz, chunk: 4096))
        }
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("closing the stream from another thread ends a read blocked on the upstream's silent pipe")
    func closeWakesBlockedUpstream() throws {
        let pipe = Pipe() // the writer stays open and silent
        let source = GzipDataSource(upstream: FileHandleDataSource(fileHandle: pipe.fileHandleForReading))
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        // Opening reads the gzip header, so the reading thread blocks in read(2) there.
        // A responsiveness check, not a benchmark: without the interruption it never returns.
        let outcome = stream.closeWhileReading(opening: true)
        #expect(outcome.blocked, "the read did not block")
        #expect(outcome.result == -1, "close() did not end the blocked read: \(String(describing: outcome.result))")
        try pipe.fileHandleForWriting.close()
        try pipe.fileHandleForReading.close()
    }
}
