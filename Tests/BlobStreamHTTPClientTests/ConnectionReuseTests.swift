import BlobStream
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import HTTPTestPeers
import Testing

/// The GETs of one read go over kept-alive connections: a long read of many blocks opens
/// about as many connections as it has GETs in flight, not one per block (a TLS handshake
/// per block on a real store); uploads through one pool, one after another, share a
/// connection.
@Suite("Remote reads keep their connections", .serialized)
struct ConnectionReuseTests {
    @Test("a read of 48 blocks, 4 in flight: the bytes whole (sha256), over a handful of connections")
    func blocksShareConnections() throws {
        let peer = try MisbehavingHTTPPeer()
        defer { peer.stop() }
        let bytes = sampleBytes(3 << 20, seed: 74)
        peer.serve(bytes, at: "/object.bin")
        // No hedging: the test counts connections, and a hedge of a slow answer (a loaded
        // machine, ThreadSanitizer) opens one more; hedges have tests of their own.
        let options = HTTPRangeOptions(
            blockSize: 64 << 10, readAhead: 3, connection: HTTPConnectionOptions(),
            retry: HTTPRetryPolicy(initialDelay: .milliseconds(20)), hedging: nil)
        let stream = BlobInputStream(
            dataSource: HTTPRangeDataSource(url: URL(string: peer.url("/object.bin"))!, options: options))
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 100_000)
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n <= 0 {
                #expect(n == 0, "\(String(describing: stream.streamError))")
                break
            }
            data.append(buffer, count: n)
        }
        #expect(sha256(data) == sha256(bytes))
        let gets = peer.requests.filter { $0.method == "GET" }.count
        #expect(gets >= 48, "one GET per 64 KiB block: \(gets)")
        // The first answer's connection ends after its block (the rest of its body is not
        // read); the blocks after it share the connections of the GETs in flight (4).
        #expect(peer.connectionsOpened <= 6, "\(peer.connectionsOpened) connections for \(gets) GETs")
    }

    @Test(
        "twelve reads open at once through one pool, each holding a connection for its first answer: every one whole"
    )
    func manyReadsOpenAtOnce() async throws {
        let peer = try MisbehavingHTTPPeer()
        defer { peer.stop() }
        let bytes = sampleBytes(2 << 20, seed: 75)
        peer.serve(bytes, at: "/object.bin")
        // A short connect timeout: a GET that waits for a connection of the pool longer than
        // this fails (AsyncHTTPClient counts the wait as connecting). With 8 connections per
        // host (AsyncHTTPClient's default), reads 9 to 12 fail so.
        let connection = HTTPConnectionOptions(connectTimeout: .seconds(1))
        let pool = HTTPClientPool(connection: connection)
        let options = HTTPRangeOptions(
            blockSize: 64 << 10, readAhead: 0, connection: connection,
            retry: HTTPRetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(20)), pool: pool)
        let url = URL(string: peer.url("/object.bin"))!
        // The reads block: on a thread of their own, not one of the tests' cooperative ones.
        let reads = await withCheckedContinuation { (done: CheckedContinuation<[(Data, Int, String)], Never>) in
            Thread {
                // Each opens with its first answer (the object's rest, streamed; the server is
                // made to wait after the first block): twelve connections held before any is read.
                let streams = (0..<12).map { _ in
                    BlobInputStream(dataSource: HTTPRangeDataSource(url: url, options: options))
                }
                for stream in streams { stream.open() }
                done.resume(
                    returning: streams.map { stream in
                        defer { stream.close() }
                        let (data, last) = stream.readToEnd(chunkSize: 100_000)
                        return (data, last, String(describing: stream.streamError))
                    })
            }.start()
        }
        for (k, (data, last, error)) in reads.enumerated() {
            #expect(last == 0, "read \(k): \(error)")
            #expect(sha256(data) == sha256(bytes), "read \(k)")
        }
        try await pool.shutdown()
    }

    @Test("five uploads through one pool, one after another: each copy whole (sha256), over one connection")
    func uploadsShareAConnection() async throws {
        let peer = try MisbehavingHTTPPeer()
        defer { peer.stop() }
        let pool = HTTPClientPool(connection: HTTPConnectionOptions())
        let uploader = HTTPClientUploader(pool: pool)
        var sent: [Data] = []
        for index in 0..<5 {
            let bytes = sampleBytes(300_000 + index, seed: UInt64(80 + index))
            sent.append(bytes)
            let result = try await uploader.upload(
                UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }, to: peer.url("/up/\(index).bin")
            ).result
            #expect(result.statusCode == 201)
        }
        for (index, bytes) in sent.enumerated() {
            #expect(peer.bytes(at: "/up/\(index).bin").map(sha256) == sha256(bytes), "upload \(index)")
        }
        #expect(peer.requests.filter { $0.action == "stored" }.count == 5)
        // Each upload used to require an event loop of its own: a connection made for it,
        // closed once the upload ended (5 connections).
        #expect(peer.connectionsOpened <= 2, "\(peer.connectionsOpened) connections for 5 uploads")
        try await pool.shutdown()
    }

    @Test("five reads given no pool, one after another: each whole (sha256), over the process's shared pool")
    func readsWithoutAPoolShareOne() throws {
        let peer = try MisbehavingHTTPPeer()
        defer { peer.stop() }
        let bytes = sampleBytes(100_000, seed: 75)
        peer.serve(bytes, at: "/small.bin")
        // No client, no pool: HTTPClientPool.shared(connection:) for these options.
        // No hedging: the test counts connections.
        let options = HTTPRangeOptions(blockSize: 256 << 10, connection: HTTPConnectionOptions(), hedging: nil)
        for index in 0..<5 {
            let stream = BlobInputStream(
                dataSource: HTTPRangeDataSource(url: URL(string: peer.url("/small.bin"))!, options: options))
            stream.open()
            let (data, last) = stream.readToEnd(chunkSize: 64 << 10)
            stream.close()
            #expect(
                last == 0 && sha256(data) == sha256(bytes), "read \(index): \(String(describing: stream.streamError))")
        }
        // A client per source (before the shared pool) opened a connection for each read.
        #expect(peer.connectionsOpened <= 2, "\(peer.connectionsOpened) connections for 5 reads")
        #expect(HTTPClientPool.shared(connection: HTTPConnectionOptions()).clientCount == 1)
    }

    @Test("five uploads given no pool, one after another: each copy whole (sha256), over the process's shared pool")
    func uploadsWithoutAPoolShareOne() async throws {
        let peer = try MisbehavingHTTPPeer()
        defer { peer.stop() }
        let uploader = HTTPClientUploader()
        for index in 0..<5 {
            let bytes = sampleBytes(200_000 + index, seed: UInt64(90 + index))
            let result = try await uploader.upload(
                UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }, to: peer.url("/own/\(index).bin")
            ).result
            #expect(result.statusCode == 201)
            #expect(peer.bytes(at: "/own/\(index).bin").map(sha256) == sha256(bytes), "upload \(index)")
        }
        // A client per upload (before the shared pool) opened a connection for each.
        #expect(peer.connectionsOpened <= 2, "\(peer.connectionsOpened) connections for 5 uploads")
    }
}
