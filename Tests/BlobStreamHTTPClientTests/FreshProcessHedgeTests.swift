import AsyncHTTPClient
import BlobStream
import BlobStreamTestSupport
import Foundation
import HTTPTestPeers
import NIOCore
import Testing

@testable import BlobStreamHTTPClient

/// Hedges before anything was measured: the delay a process starts with (and what it learns
/// of an origin from other sources), the object's end asked for at open, and a small request
/// beside a read (`HTTPHedging.execute`).
@Suite("Remote reads: hedges from a process's first request", .serialized)
struct FreshProcessHedgeTests {
    let peer: MisbehavingHTTPPeer
    let bytes = sampleBytes(1 << 20 | 4_321, seed: 64)

    init() throws {
        peer = try MisbehavingHTTPPeer()
        peer.serve(bytes, at: "/object.bin")
    }

    /// What `work` returns or throws (the client is shut down before the test looks at it).
    static func outcome<T>(_ work: () async throws -> T) async -> Result<T, any Error> {
        do {
            return .success(try await work())
        } catch {
            return .failure(error)
        }
    }

    @Test("the first delay: firstDelay, or 3 × the connection's setup when longer; then 4 × the origin's median head")
    func originDelay() {
        let timings = OriginTimings()
        let hedging = HTTPHedging.standard
        #expect(timings.delay(hedging, connect: nil) == .milliseconds(250))
        #expect(timings.delay(hedging, connect: .milliseconds(50)) == .milliseconds(250))
        // A connection that took 160 ms (TLS 80 ms away): 480 ms before the first hedge.
        #expect(timings.delay(hedging, connect: .milliseconds(160)) == .milliseconds(480))
        // Answers from the origin: 4 × their median, 100 ms at least; the connection no more.
        timings.noteHead(after: .milliseconds(5))
        #expect(timings.delay(hedging, connect: .milliseconds(160)) == .milliseconds(100))
        for _ in 0..<3 { timings.noteHead(after: .milliseconds(90)) }
        #expect(timings.delay(hedging, connect: nil) == .milliseconds(360))
        #expect(
            OriginTimings.of(URL(string: "http://Example.com:81/a")!)
                === OriginTimings.of(URL(string: "http://example.com:81/b")!))
        #expect(
            OriginTimings.of(URL(string: "http://example.com:81/a")!)
                !== OriginTimings.of(URL(string: "http://example.com:82/a")!))
    }

    @Test(
        "the object's end asked for at open (expectEnd) gets no answer: a GET of those bytes with If-Match brings them")
    func hungEnd() throws {
        defer { peer.stop() }
        // The first GET and the end's GET both hang: the first GET's hedge opens the read,
        // then the end's when the reader waits for it.
        peer.setFaults([.hang, .hang], from: 1)
        var options = HTTPRangeOptions(
            blockSize: 128 << 10, connection: HTTPConnectionOptions(),
            retry: HTTPRetryPolicy(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)))
        options.minimumRate = nil
        let source = HTTPRangeDataSource(url: URL(string: peer.url("/object.bin"))!, options: options)
        let watchdog = DispatchWorkItem { source.interrupt() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 15, execute: watchdog)
        defer { watchdog.cancel() }
        source.expectEnd(64 << 10)
        let started = Date()
        source.open()
        defer { source.close() }
        let length = Int64(bytes.count)
        let tail = try source.bytes(in: [length - 1_000..<length])
        let seconds = Date().timeIntervalSince(started)
        #expect(tail == [bytes.suffix(1_000)])
        #expect(seconds < 5, "hedges within 250 ms each, not the idle timeout: \(seconds) s")
        let requests = peer.requests
        #expect(
            requests.filter { $0.action == "hung" }.map(\.range).sorted { ($0 ?? "") < ($1 ?? "") } == [
                "bytes=-65536", "bytes=0-",
            ], "\(requests)")
        let end = "bytes=\(length - 65_536)-\(length - 1)"
        #expect(requests.contains { $0.range == end && $0.action == "served" && $0.ifMatch != nil }, "\(requests)")
    }

    @Test(
        "a small request beside a read (HTTPHedging.execute) that gets no answer is sent again; the first answer is kept"
    )
    func hedgedRequest() async throws {
        defer { peer.stop() }
        peer.setFaults([.hang], from: 1)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var request = try HTTPClient.Request(url: peer.url("/object.bin"))
        request.headers.add(name: "Range", value: "bytes=0-99")
        let started = Date()
        let answer = await Self.outcome {
            try await HTTPHedging.standard.execute(request, with: client, deadline: .now() + .seconds(15)).get()
        }
        let seconds = Date().timeIntervalSince(started)
        try await client.shutdown()
        let response = try answer.get()
        #expect(response.status.code == 206)
        #expect(response.body.map { Data($0.readableBytesView) } == bytes.prefix(100))
        #expect(seconds < 5, "a hedge after 250 ms, not the deadline: \(seconds) s")
        #expect(peer.requests.map(\.action) == ["hung", "served"], "\(peer.requests)")
    }

    @Test("HTTPHedging.execute with maxHedges 0: one request, its answer")
    func noHedges() async throws {
        defer { peer.stop() }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let request = try HTTPClient.Request(url: peer.url("/object.bin"))
        let answer = await Self.outcome { try await HTTPHedging(maxHedges: 0).execute(request, with: client).get() }
        try await client.shutdown()
        let response = try answer.get()
        #expect(response.status.code == 200)
        #expect(peer.requests.count == 1)
    }
}
