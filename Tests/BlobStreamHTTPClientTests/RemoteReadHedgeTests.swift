import BlobStream
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import HTTPTestPeers
import Testing

/// A GET that the server never answers (a node that hangs) is hedged: the same range asked
/// again, the first answer kept; the read ends whole long before any timeout.
@Suite("Remote reads: hedged ranges", .serialized)
struct RemoteReadHedgeTests {
    static func options(hedging: HTTPHedging? = .standard) -> HTTPRangeOptions {
        var options = HTTPRangeOptions(
            blockSize: 128 << 10, readAhead: 3, connection: HTTPConnectionOptions(),
            retry: HTTPRetryPolicy(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)))
        options.hedging = hedging
        return options
    }

    let peer: MisbehavingHTTPPeer
    let bytes = sampleBytes(1 << 20 | 12_345, seed: 63)

    init() throws {
        peer = try MisbehavingHTTPPeer()
        peer.serve(bytes, at: "/object.bin")
    }

    /// Reads `url` to its end; a read still running after `limit` seconds is interrupted (a
    /// hung GET would otherwise hold it for the idle timeout, 60 s).
    func read(_ url: String, _ options: HTTPRangeOptions = options(), limit: Double = 15) -> (
        data: Data, error: BlobStreamError?, seconds: Double
    ) {
        let started = Date()
        let source = HTTPRangeDataSource(url: URL(string: url)!, options: options)
        let watchdog = DispatchWorkItem { source.interrupt() }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
        defer { watchdog.cancel() }
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        defer { stream.close() }
        let (data, _) = stream.readToEnd(chunkSize: 50_000)
        return (data, source.error as? BlobStreamError, Date().timeIntervalSince(started))
    }

    @Test("a block GET that gets no answer is asked again after 250 ms at most, with If-Match; the read ends whole")
    func hungBlock() throws {
        defer { peer.stop() }
        peer.setFaults([.hang], from: 3)
        let read = read(peer.url("/object.bin"))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(read.seconds < 5, "a hedge within 250 ms, not the idle timeout: \(read.seconds) s")
        let hung = try #require(peer.requests.first { $0.action == "hung" })
        let again = peer.requests.filter { $0.range == hung.range && $0.action == "served" }
        // One hedge, or more when the machine is so busy that the first hedge is slow too.
        #expect((1...4).contains(again.count), "\(peer.requests)")
        #expect(again.allSatisfy { $0.ifMatch != nil }, "a hedge is pinned to the ETag")
    }

    @Test("the first GET gets no answer: a GET of the first block opens the read; it ends whole")
    func hungFirstRequest() throws {
        defer { peer.stop() }
        peer.setFaults([.hang], from: 1)
        let read = read(peer.url("/object.bin"))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(read.seconds < 5, "a hedge within 250 ms, not the idle timeout: \(read.seconds) s")
        #expect(peer.requests.first?.range == "bytes=0-" && peer.requests.first?.action == "hung")
        #expect(peer.requests.dropFirst().first?.range == "bytes=0-131071", "\(peer.requests)")
    }

    @Test("the first GET and its first hedge get no answer: a second hedge opens the read; it ends whole")
    func hungFirstRequestAndHedge() throws {
        defer { peer.stop() }
        peer.setFaults([.hang, .hang], from: 1)
        let read = read(peer.url("/object.bin"))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(read.seconds < 5, "two hedges 250 ms apart, not the idle timeout: \(read.seconds) s")
        let first = peer.requests.prefix(3).map { "\($0.range ?? "") \($0.action)" }
        #expect(first == ["bytes=0- hung", "bytes=0-131071 hung", "bytes=0-131071 served"], "\(peer.requests)")
    }

    @Test("without hedging the hung GET holds the read (until the watchdog here)")
    func withoutHedging() throws {
        defer { peer.stop() }
        peer.setFaults([.hang], from: 3)
        let read = read(peer.url("/object.bin"), Self.options(hedging: nil), limit: 2)
        #expect(read.error?.code == .closed, "\(String(describing: read.error))")
        #expect(read.data.count < bytes.count)
        #expect(peer.requests.filter { $0.action == "hung" }.count == 1)
    }
}
