import BlobStream
import BlobStreamHTTPClient
import Foundation
import NginxTestServer
import Testing

/// The upload shape both clients share (`UploadClient`), with AsyncHTTPClient: the result, the
/// progress sequence, a failure and a cancellation through the handle.
@Suite("AsyncHTTPClient through UploadClient: result, progress sequence, cancel", .serialized)
final class HTTPClientUploaderTests {
    let server: NginxTestServer
    let checks: UploadClientChecks

    init() throws {
        server = try NginxTestServer()
        checks = UploadClientChecks(server: server, client: HTTPClientUploader())
    }
    deinit { server.stop() }

    @Test("the server's copy is identical; the result has status, headers, bytes sent; progress rises to one finish")
    func resultAndProgress() async throws {
        try await checks.resultAndProgress(name: "HTTPClient")
    }

    @Test("a 403 through the handle: .uploadFailed naming the status and the URL; the progress sequence ends")
    func failure() async {
        await checks.failureThroughTheHandle()
    }

    @Test(
        "cancel() on a running upload: CancellationError at once (well before any timeout); the progress sequence ends")
    func cancel() async throws {
        try await checks.cancelThroughTheHandle()
    }

    @Test("a URL-typed upload: a Foundation-composed URL stores the decoded name; a non-HTTP URL is .malformedURL")
    func urlTyped() async throws {
        try await checks.urlTyped(name: "HTTPClient")
    }

    @Test("uploads through a pool: the copies identical, one client for them all; after shutdown, .closed")
    func pooled() async throws {
        let pool = HTTPClientPool(connection: HTTPConnectionOptions())
        let pooled = UploadClientChecks(server: server, client: HTTPClientUploader(pool: pool))
        try await pooled.resultAndProgress(name: "pooled-1")
        try await pooled.resultAndProgress(name: "pooled-2")
        #expect(pool.clientCount == 1)
        try await pool.shutdown()
        let url = server.baseURL + "/files/after-shutdown.bin"
        let error = await #expect(throws: BlobStreamError.self) {
            try await HTTPClientUploader(pool: pool).upload(
                UploadBody(length: 1) { DataBytesSource(Data("x".utf8)) }, to: url
            )
            .result
        }
        #expect(error?.code == .closed)
        #expect(error?.message.contains(url) == true)
    }
}
