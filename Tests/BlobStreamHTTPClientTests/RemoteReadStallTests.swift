import BlobStream
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import HTTPTestPeers
import Testing

/// A server that sends a range's body a few bytes a second never falls silent long enough
/// for the idle timeout: the minimum rate (`HTTPRangeOptions.minimumRate`, set short here)
/// ends such a GET as a stall, tried again at its offset under `If-Match`.
@Suite("Remote reads: a trickling server is a stall", .serialized)
struct RemoteReadStallTests {
    /// Small blocks, four in flight, quick retries, at least 1 KiB/s over 0.5 s.
    static func options(
        minimumRate: HTTPMinimumRate? = HTTPMinimumRate(bytesPerSecond: 1 << 10, window: .milliseconds(500))
    )
        -> HTTPRangeOptions
    {
        var options = HTTPRangeOptions(
            blockSize: 128 << 10, readAhead: 3, connection: HTTPConnectionOptions(),
            retry: HTTPRetryPolicy(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)))
        options.minimumRate = minimumRate
        options.hedging = nil // a trickle is never silent for long; no hedge to count
        return options
    }

    let peer: MisbehavingHTTPPeer
    let bytes = sampleBytes(1 << 20 | 12_345, seed: 62)

    init() throws {
        peer = try MisbehavingHTTPPeer()
        peer.serve(bytes, at: "/object.bin")
        peer.serveWithoutETag(bytes, at: "/weak.bin")
    }

    /// Reads `url` to its end, `pause` seconds between reads of `chunk` bytes; a read still
    /// running after `limit` seconds is interrupted (so that a read that would take hours
    /// fails the test, not the run).
    func read(
        _ url: String, _ options: HTTPRangeOptions = options(), chunk: Int = 50_000, pause: Double = 0,
        limit: Double = 20
    ) -> (data: Data, error: BlobStreamError?, seconds: Double) {
        let started = Date()
        let source = HTTPRangeDataSource(url: URL(string: url)!, options: options)
        let watchdog = DispatchWorkItem { source.interrupt() }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
        defer { watchdog.cancel() }
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let n = buffer.withUnsafeMutableBufferPointer { stream.read($0.baseAddress!, maxLength: chunk) }
            if n <= 0 { break }
            data.append(contentsOf: buffer[..<n])
            if pause > 0 { Thread.sleep(forTimeInterval: pause) } // the point: a slow reader
        }
        return (data, source.error as? BlobStreamError, Date().timeIntervalSince(started))
    }

    @Test("the default: 1 KiB/s over 30 s")
    func defaultRate() {
        #expect(HTTPRangeOptions().minimumRate == HTTPMinimumRate(bytesPerSecond: 1024, window: .seconds(30)))
    }

    @Test(
        "a range whose body trickles at 8 bytes/s is asked again at its offset with If-Match; the read ends whole",
        arguments: [1, 3])
    func trickleOnce(get: Int) throws {
        defer { peer.stop() }
        peer.setFaults([.trickle(bytesPerSecond: 8)], from: get)
        let read = read(peer.url("/object.bin"))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(read.seconds < 10, "one window of 0.5 s, one retry: \(read.seconds) s")
        let trickled = try #require(peer.requests.first { $0.action == "trickled" })
        // The first GET asks to the end; its first block is asked again as a block.
        let range = trickled.range == "bytes=0-" ? "bytes=0-131071" : try #require(trickled.range)
        let again = peer.requests.filter { $0.range == range && $0.action == "served" }
        #expect(again.count == 1, "\(peer.requests)")
        #expect(again.first?.ifMatch != nil, "a retry is pinned to the ETag")
    }

    @Test("a server that trickles every range: a stall error naming the URL and the offset, within seconds")
    func trickleAlways() throws {
        defer { peer.stop() }
        peer.setFaults(Array(repeating: .trickle(bytesPerSecond: 8), count: 50), from: 2)
        let url = peer.url("/object.bin")
        let read = read(url)
        #expect(read.data == bytes.prefix(read.data.count), "only bytes of the object, in order")
        #expect(read.data.count == 128 << 10, "the first block, then the stall")
        let error = try #require(read.error)
        #expect(error.code == .timedOut, "\(error)")
        #expect(error.message.contains(url) && error.message.contains("stalled"), "\(error)")
        #expect(error.message.contains("below the minimum rate of 1024 bytes/s"), "\(error)")
        #expect(error.message.contains("offset 131072") && error.message.contains("2 attempts"), "\(error)")
        #expect(read.seconds < 10, "two windows of 0.5 s: \(read.seconds) s")
    }

    @Test("a body slower than usual but above the minimum is not cut")
    func slowButAboveMinimum() throws {
        defer { peer.stop() }
        peer.setFaults([.trickle(bytesPerSecond: 200 << 10)], from: 2)
        let read = read(peer.url("/object.bin"))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(peer.requests.filter { $0.method == "GET" }.count == 9, "no GET asked again: \(peer.requests)")
    }

    @Test("a reader slower than the window holds the server back: not a stall (no strong ETag, one answer)")
    func slowReaderIsNoStall() throws {
        defer { peer.stop() }
        var options = Self.options(minimumRate: HTTPMinimumRate(bytesPerSecond: 1 << 10, window: .milliseconds(200)))
        options.blockSize = 256 << 10
        let read = read(peer.url("/weak.bin"), options, chunk: 200_000, pause: 0.4)
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(peer.requests.count == 1)
    }
}
