import AsyncHTTPClient
import BlobStream
import BlobStreamHTTPClient
import BlobStreamNetworking
import BlobStreamTestSupport
import Foundation
import NginxTestServer
import Testing

/// Redirects, early answers, time limits, cancellation and bad URLs, against real peers on
/// 127.0.0.1 (nginx, a small Python server, a socket that never reads).
@Suite("AsyncHTTPClient uploads: redirects, early answers, limits, cancellation, URLs", .serialized)
final class HTTPClientHardeningTests {
    let server: NginxTestServer
    let checks: UploadHardeningChecks

    init() throws {
        server = try NginxTestServer()
        checks = UploadHardeningChecks(server: server, seed: 11, client: HTTPClientUploader())
    }
    deinit { server.stop() }

    func body(_ bytes: Data, knownLength: Bool = true) -> UploadBody {
        UploadBody(length: knownLength ? Int64(bytes.count) : nil) { DataBytesSource(bytes) }
    }

    @Test(
        "a 307 or 308 redirect: the whole body reaches the new place (sha256), with and without a known length",
        arguments: [307, 308], [true, false])
    func redirect(status: Int, knownLength: Bool) async throws {
        let bytes = sampleBytes(3 * 1024 * 1024 + 5, seed: UInt64(status))
        let name = "r\(status)-\(knownLength).bin"
        let log = ProgressLog()
        let upload = HTTPClientUploader().upload(
            body(bytes, knownLength: knownLength), to: "\(server.baseURL)/redirect-\(status)/\(name)")
        for await report in upload.progress { log.add(report) }
        let response = try await upload.result
        #expect(response.statusCode == 201 || response.statusCode == 204)
        #expect(server.stored(name).map(sha256) == sha256(bytes))
        #expect(
            log.all.last
                == UploadProgress(
                    sent: Int64(bytes.count), total: knownLength ? Int64(bytes.count) : nil, isFinished: true))
    }

    @Test("a client of the caller's that follows redirects itself also sends the whole body again")
    func redirectFollowedByTheClient() async throws {
        let bytes = sampleBytes(2 * 1024 * 1024 + 1, seed: 3)
        _ = try await HTTPClientUploader(client: .shared).upload(
            body(bytes), to: "\(server.baseURL)/redirect-307/own.bin"
        ).result
        #expect(server.stored("own.bin").map(sha256) == sha256(bytes))
    }

    @Test(
        "a 303 redirect (a client would follow it with GET, without the body) and a redirect loop: errors naming the redirect"
    )
    func redirectsNotFollowed() async {
        await checks.redirectsNotFollowed()
    }

    @Test(
        "a redirect of a body that is not repeatable (a pipe): an error naming the redirect, also with a client that follows it itself"
    )
    func redirectOfOneShotBody() async throws {
        let bytes = sampleBytes(1_000_000)
        let body = UploadBody(length: nil, repeatable: false) { DataBytesSource(bytes) }
        await checks.redirectOfOneShotBody(body)
        await #expect {
            _ = try await HTTPClientUploader(client: .shared).upload(
                body, to: "\(self.server.baseURL)/redirect-307/pipe2.bin"
            ).result
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .uploadFailed && e!.message.contains("cannot be read again")
        }
        #expect(server.stored("pipe2.bin") == nil)
    }

    @Test(
        "a 201 after the first 1 MB of 16 MB: an error with bytes sent / length, never success",
        arguments: [true, false], [true, false])
    func earlyAnswer(drain: Bool, knownLength: Bool) async throws {
        try await checks.earlyAnswer(drain: drain, knownLength: knownLength)
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
            ("http://127.0.0.1:65536/x", "out of range"),
            ("http://127.0.0.1:http/x", "not a number"),
            ("ftp://127.0.0.1/x", "scheme 'ftp'"),
            ("http:///x", "no host"),
            ("127.0.0.1/x", "no scheme"),
            ("http://127.0.0.1/a b", "space"),
            ("http://127.0.0.1/x%00.bin", "%00"),
            ("http://127.0.0.1/x\u{1}", "control byte 0x01"),
        ])
    func badURL(url: String, reason: String) async throws {
        // `.malformedURL` is the refusal of the URL itself: a connection that was tried
        // fails with another code (`.connectFailed`, `.timedOut`).
        await #expect {
            _ = try await HTTPClientUploader().upload(self.body(sampleBytes(10)), to: url).result
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .malformedURL && e!.message.contains(reason)
                && e!.message.contains(url.replacingOccurrences(of: "\u{1}", with: "%01"))
        }
    }
}
