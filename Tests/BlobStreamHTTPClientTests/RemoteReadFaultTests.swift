import BlobStream
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import HTTPTestPeers
import Testing

/// Ranged reads against a misbehaving peer in this process: cut bodies, 503 storms, a peer
/// that goes down and comes back, redirect chains. Every read is checked by its hash.
@Suite("Remote reads: retries that never splice, redirects", .serialized)
struct RemoteReadFaultTests {
    /// Small blocks (many GETs), four in flight, quick retries, no proxy from the environment.
    static func options(retry: HTTPRetryPolicy = quick) -> HTTPRangeOptions {
        HTTPRangeOptions(blockSize: 128 << 10, readAhead: 3, connection: HTTPConnectionOptions(), retry: retry)
    }
    static let quick = HTTPRetryPolicy(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200))

    let peer: MisbehavingHTTPPeer
    let bytes = sampleBytes(1 << 20 | 12_345, seed: 61)

    init() throws {
        peer = try MisbehavingHTTPPeer()
        peer.serve(bytes, at: "/object.bin")
    }

    /// Reads `url` to its end through a synchronous stream: the bytes, the last result, the
    /// source's error and the seconds it took.
    func read(_ url: String, _ options: HTTPRangeOptions = options()) -> (
        data: Data, last: Int, error: BlobStreamError?, seconds: Double
    ) {
        let started = Date()
        let source = HTTPRangeDataSource(url: URL(string: url)!, options: options)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        defer { stream.close() }
        let (data, last) = stream.readToEnd(chunkSize: 50_000)
        return (data, last, source.error as? BlobStreamError, Date().timeIntervalSince(started))
    }

    /// The GETs of `range` the peer saw (the ranges after the first: with `If-Match`).
    func gets(_ range: String) -> [MisbehavingHTTPPeer.Seen] {
        peer.requests.filter { $0.method == "GET" && $0.range == range }
    }

    @Test(
        "a body cut once mid-way is asked again at its offset with If-Match; the read ends whole", arguments: [1, 2, 4])
    func cutOnce(get: Int) throws {
        defer { peer.stop() }
        peer.setFaults([.cut(afterBytes: 50_000)], from: get)
        let read = read(peer.url("/object.bin"))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(read.last == 0)
        #expect(sha256(read.data) == sha256(bytes))
        let cut = try #require(peer.requests.first { $0.action == "cut" })
        // The first GET asks to the end; its first block is asked again as a block.
        let range = cut.range == "bytes=0-" ? "bytes=0-131071" : try #require(cut.range)
        let again = gets(range).filter { $0.action == "served" }
        #expect(again.count == 1, "\(peer.requests)")
        #expect(again.first?.ifMatch != nil, "a retry is pinned to the ETag")
    }

    @Test("a 503 storm shorter than the attempts: retried with backoff, the read ends whole", arguments: [1, 3])
    func shortStorm(get: Int) throws {
        defer { peer.stop() }
        peer.setFaults(Array(repeating: .status(503), count: 3), from: get)
        let read = read(peer.url("/object.bin"))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(peer.requests.filter { $0.action == "status" }.count == 3)
    }

    @Test("a 503 storm past the attempts: an error naming the URL and the offset, after 5 attempts of one range")
    func longStorm() throws {
        defer { peer.stop() }
        peer.setFaults(Array(repeating: .status(503), count: 50), from: 2)
        let url = peer.url("/object.bin")
        let read = read(url)
        #expect(read.last == -1)
        #expect(read.data == bytes.prefix(read.data.count), "only bytes of the object, in order")
        let error = try #require(read.error)
        #expect(error.code == .httpFailed, "\(error)")
        #expect(error.message.contains(url) && error.message.contains("503"), "\(error)")
        #expect(error.message.contains("offset") && error.message.contains("5 attempts"), "\(error)")
        // Four GETs in flight; the first of them in order is tried 5 times.
        #expect(gets("bytes=131072-262143").count == 5, "\(peer.requests)")
    }

    @Test("the budget of waiting bounds a storm: the read fails once the waits add up to maxWaiting")
    func waitingBudget() throws {
        defer { peer.stop() }
        peer.setFaults(Array(repeating: .status(503), count: 1_000), from: 1)
        let policy = HTTPRetryPolicy(
            maxAttempts: 1_000, maxWaiting: .milliseconds(600), initialDelay: .milliseconds(100),
            maxDelay: .milliseconds(100))
        let read = read(peer.url("/object.bin"), Self.options(retry: policy))
        #expect(read.last == -1 && read.data.isEmpty)
        #expect(read.error?.code == .httpFailed, "\(String(describing: read.error))")
        #expect(read.seconds < 5, "the waits are bounded by 0.6 s")
        let attempts = peer.requests.count
        #expect(attempts >= 7 && attempts <= 14, "0.6 s of waits of 50–100 ms: \(attempts) attempts")
    }

    @Test("a peer that goes down mid-read and comes back within the budget: the read ends whole")
    func downAndBack() throws {
        defer { peer.stop() }
        peer.setFaults([.down(seconds: 1.5)], from: 3)
        let policy = HTTPRetryPolicy(initialDelay: .milliseconds(500), maxDelay: .seconds(2))
        let read = read(peer.url("/object.bin"), Self.options(retry: policy))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        let down = try #require(peer.requests.firstIndex { $0.action == "down" })
        #expect(peer.requests[(down + 1)...].contains { $0.action == "served" })
    }

    @Test("a peer that stays down: an error within the budget naming the URL and the offset")
    func staysDown() throws {
        defer { peer.stop() }
        peer.setFaults([.down(seconds: 600)], from: 2)
        let policy = HTTPRetryPolicy(maxWaiting: .seconds(2), initialDelay: .milliseconds(200))
        let url = peer.url("/object.bin")
        let read = read(url, Self.options(retry: policy))
        #expect(read.last == -1)
        #expect(read.data == bytes.prefix(read.data.count))
        let error = try #require(read.error)
        #expect(error.message.contains(url) && error.message.contains("offset"), "\(error)")
        #expect(read.seconds < 12, "2 s of waiting, each attempt refused at once")
    }

    @Test("no strong ETag: a cut read is not asked again (a second request could splice two versions)")
    func noRetryWithoutValidator() throws {
        defer { peer.stop() }
        peer.serveWithoutETag(bytes, at: "/weak.bin")
        peer.setFaults([.cut(afterBytes: 300_000)], from: 1)
        let read = read(peer.url("/weak.bin"))
        #expect(read.last == -1)
        #expect(read.error?.code == .truncated, "\(String(describing: read.error))")
        #expect(read.data == bytes.prefix(read.data.count))
        #expect(peer.requests.count == 1)
    }

    @Test("close() during the wait before a retry ends the read at once (waits of 15-30 s)")
    func closeWhileWaiting() throws {
        defer { peer.stop() }
        peer.setFaults(Array(repeating: .status(503), count: 3), from: 2) // the three blocks read ahead
        let policy = HTTPRetryPolicy(initialDelay: .seconds(30), maxDelay: .seconds(30))
        let source = HTTPRangeDataSource(
            url: URL(string: peer.url("/object.bin"))!, options: Self.options(retry: policy))
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var first = [UInt8](repeating: 0, count: 128 << 10)
        var got = 0
        while got < first.count {
            let n = first.withUnsafeMutableBufferPointer {
                stream.read($0.baseAddress! + got, maxLength: $0.count - got)
            }
            guard n > 0 else { break }
            got += n
        }
        #expect(got == first.count && Data(first) == bytes.prefix(got))
        let done = DispatchSemaphore(value: 0)
        let result = TestBox<Int?>(nil)
        let handoff = Handoff(value: stream)
        Thread {
            var byte: UInt8 = 0
            result.value = handoff.value.read(&byte, maxLength: 1)
            done.signal()
        }.start()
        #expect(peer.wait { $0.filter { $0.action == "status" }.count == 3 })
        let closing = Date()
        Thread { handoff.value.close() }.start()
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(result.value == -1)
        #expect(Date().timeIntervalSince(closing) < 5)
    }

    @Test("a redirect chain of 5 (301, 302, 303, 307, 308) is followed; the ranges go to the last location")
    func redirects() throws {
        defer { peer.stop() }
        let read = read(peer.url("/hop/5/object.bin"))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(peer.requests.filter { $0.action == "redirect" }.count == 5)
        let served = peer.requests.filter { $0.action == "served" }
        #expect(served.count == 9 && served.allSatisfy { $0.path == "/object.bin" }, "\(peer.requests)")
    }

    @Test("a sixth redirect is refused: an error naming the URL")
    func tooManyRedirects() throws {
        defer { peer.stop() }
        let url = peer.url("/hop/6/object.bin")
        let read = read(url)
        #expect(read.last == -1 && read.data.isEmpty)
        #expect(read.error?.code == .httpFailed)
        #expect(read.error?.message.contains("more than 5 redirects") == true, "\(String(describing: read.error))")
        #expect(read.error?.message.contains(url) == true)
        #expect(peer.requests.count == 6)
    }
}
