import BlobStream
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import HTTPTestPeers
import Testing

/// `HTTPClientPool`: one client for every source of a registry; its owner shuts it down.
@Suite("One connection pool for the sources of a registry", .serialized)
struct HTTPClientPoolTests {
    @Test("the sources of a registry share one client; closing a source keeps it; shutdown ends it")
    func sharedClient() throws {
        let peer = try MisbehavingHTTPPeer()
        defer { peer.stop() }
        let a = sampleBytes(700_000, seed: 91)
        let b = sampleBytes(300_001, seed: 92)
        peer.serve(a, at: "/a.bin")
        peer.serve(b, at: "/b.bin")
        let pool = HTTPClientPool(connection: HTTPConnectionOptions())
        let registry = DataSourceRegistry()
        HTTPSources.register(
            in: registry,
            options: HTTPRangeOptions(blockSize: 64 << 10, connection: HTTPConnectionOptions(), pool: pool))
        // Each source is closed before the next: a source that shut down the shared client
        // would fail the next one.
        for (path, expected) in [("/a.bin", a), ("/b.bin", b), ("/a.bin", a)] {
            let stream = try BlobInputStream(url: peer.url(path), registry: registry)
            stream.open()
            let (data, last) = stream.readToEnd(chunkSize: 50_000)
            stream.close()
            #expect(last == 0, "\(path): \(String(describing: stream.dataSource.error))")
            #expect(sha256(data) == sha256(expected), "\(path)")
        }
        #expect(pool.clientCount == 1)
        try pool.syncShutdown()
        let after = try BlobInputStream(url: peer.url("/a.bin"), registry: registry)
        after.open()
        let (data, last) = after.readToEnd()
        after.close()
        #expect(last == -1 && data.isEmpty)
        let error = after.dataSource.error as? BlobStreamError
        #expect(error?.code == .closed, "\(String(describing: error))")
        #expect(error?.message.contains(peer.url("/a.bin")) == true)
    }
}
