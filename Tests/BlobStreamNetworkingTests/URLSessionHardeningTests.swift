import BlobStream
import BlobStreamNetworking
import BlobStreamTestSupport
import Foundation
import NginxTestServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Redirects, early answers, time limits, cancellation and bad URLs, against real peers on
/// 127.0.0.1 (nginx, a small Python server, a socket that never reads).
@Suite("URLSession uploads: redirects, early answers, limits, cancellation, URLs", .serialized)
final class URLSessionHardeningTests {
    let server: NginxTestServer
    let checks: UploadHardeningChecks

    init() throws {
        server = try NginxTestServer()
        checks = UploadHardeningChecks(server: server, seed: 7, client: URLSessionUploader())
    }
    deinit { server.stop() }

    func body(_ bytes: Data) -> UploadBody {
        UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }
    }

    @Test(
        "a 307 or 308 redirect: the whole body reaches the new place (sha256), again from the start",
        arguments: [307, 308])
    func redirect(status: Int) async throws {
        let bytes = sampleBytes(3 * 1024 * 1024 + 5, seed: UInt64(status))
        let log = ProgressLog()
        // The default connect timeout (10 s), scaled under ThreadSanitizer: there, with the whole
        // suite on 2 cores, URLSession once took longer than 10 s to connect to the redirect.
        let upload = URLSessionUploader().upload(
            body(bytes), to: "\(server.baseURL)/redirect-\(status)/r\(status).bin",
            options: UploadOptions(connectTimeout: TestTiming.scaled(.seconds(10))))
        for await report in upload.progress { log.add(report) }
        let response = try await upload.result
        #expect(response.statusCode == 201 || response.statusCode == 204)
        #expect(server.stored("r\(status).bin").map(sha256) == sha256(bytes))
        #expect(log.all.last == UploadProgress(sent: Int64(bytes.count), total: Int64(bytes.count), isFinished: true))
    }

    @Test(
        "a 303 redirect (a client would follow it with GET, without the body) and a redirect loop: errors naming the redirect"
    )
    func redirectsNotFollowed() async {
        await checks.redirectsNotFollowed()
    }

    @Test("a redirect of a body that is not repeatable (a pipe): an error naming the redirect, nothing stored")
    func redirectOfOneShotBody() async {
        let bytes = sampleBytes(1_000_000)
        await checks.redirectOfOneShotBody(UploadBody(length: nil, repeatable: false) { DataBytesSource(bytes) })
    }

    @Test(
        "a 201 after the first 1 MB of 16 MB: an error with bytes sent / length, never success",
        arguments: [true, false])
    func earlyAnswer(drain: Bool) async throws {
        try await checks.earlyAnswer(drain: drain)
    }

    @Test("a peer that accepts and never reads or answers: the idle timeout ends the upload, naming it")
    func idleTimeout() async throws {
        try await checks.idleTimeout()
    }

    @Test("a connection that never completes: the connect timeout ends the upload, naming it")
    func connectTimeout() async throws {
        try await checks.connectTimeout()
    }

    @Test("nobody listening: the upload fails at once (well before the connect timeout)")
    func refusedQuickly() async throws {
        try await checks.refusedQuickly()
    }

    @Test("cancelling a running upload to a stalled peer: CancellationError at once (well before any timeout)")
    func cancellation() async throws {
        try await checks.cancellation()
    }

    @Test(
        "a URL no upload can go to fails before any I/O, naming the URL and what is wrong",
        arguments: [
            ("http://127.0.0.1:99999/x", "out of range"),
            ("http://127.0.0.1:0/x", "out of range"),
            ("ftp://127.0.0.1/x", "scheme 'ftp'"),
            ("http:///x", "no host"),
            ("http://127.0.0.1/x%00.bin", "%00"),
        ])
    func badURL(url: String, reason: String) async throws {
        guard let value = URL(string: url) else { return } // Foundation refuses it already
        await #expect {
            _ = try await URLSessionUploader().upload(self.body(sampleBytes(10)), to: value).result
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .malformedURL && e!.message.contains(reason) && e!.message.contains(url)
        }
    }
}
