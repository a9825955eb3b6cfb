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
    let clock = ContinuousClock()

    init() throws { server = try NginxTestServer() }
    deinit { server.stop() }

    func body(_ bytes: Data) -> UploadBody {
        UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }
    }

    @Test("a 307 or 308 redirect: the whole body reaches the new place (sha256), again from the start", arguments: [307, 308])
    func redirect(status: Int) async throws {
        let bytes = sampleBytes(3 * 1024 * 1024 + 5, seed: UInt64(status))
        let log = ProgressLog()
        let response = try await URLSessionUpload.upload(
            body(bytes), to: URL(string: "\(server.baseURL)/redirect-\(status)/r\(status).bin")!, progress: log.add)
        #expect(response.statusCode == 201 || response.statusCode == 204)
        #expect(server.stored("r\(status).bin").map(sha256) == sha256(bytes))
        #expect(log.all.last == UploadProgress(sent: Int64(bytes.count), total: Int64(bytes.count), isFinished: true))
    }

    @Test("a 303 redirect (a client would follow it with GET, without the body) and a redirect loop: errors naming the redirect")
    func redirectsNotFollowed() async throws {
        let bytes = sampleBytes(100_000)
        await #expect {
            _ = try await URLSessionUpload.upload(self.body(bytes), to: URL(string: "\(self.server.baseURL)/redirect-303/see.bin")!)
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .uploadFailed && e!.message.contains("HTTP 303") && e!.message.contains("/files/see.bin")
                && e!.message.contains("/redirect-303/see.bin")
        }
        #expect(server.stored("see.bin") == nil)
        await #expect {
            _ = try await URLSessionUpload.upload(
                self.body(bytes), to: URL(string: "\(self.server.baseURL)/loop/x")!, options: UploadOptions(maxRedirects: 3))
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .uploadFailed && e!.message.contains("more than 3 redirects") && e!.message.contains("/loop/x")
        }
    }

    @Test("a redirect of a body that is not repeatable (a pipe): an error naming the redirect, nothing stored")
    func redirectOfOneShotBody() async throws {
        let bytes = sampleBytes(1_000_000)
        let body = UploadBody(length: nil, repeatable: false) { DataBytesSource(bytes) }
        await #expect {
            _ = try await URLSessionUpload.upload(body, to: URL(string: "\(self.server.baseURL)/redirect-307/pipe.bin")!)
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .uploadFailed && e!.message.contains("HTTP 307") && e!.message.contains("/files/pipe.bin")
                && e!.message.contains("cannot be read again")
        }
        #expect(server.stored("pipe.bin") == nil)
    }

    @Test("a 201 after the first 1 MB of 16 MB: an error with bytes sent / length, never success", arguments: [true, false])
    func earlyAnswer(drain: Bool) async throws {
        let peer = try EarlyAnswerPeer(answerAfter: 1 << 20, drain: drain)
        defer { peer.stop() }
        let bytes = sampleBytes(16 * 1024 * 1024)
        do {
            _ = try await URLSessionUpload.upload(body(bytes), to: URL(string: "\(peer.baseURL)/files/x")!)
            Issue.record("the upload succeeded")
        } catch let error as BlobStreamError {
            #expect(error.code == .uploadFailed)
            #expect(error.message.contains("answered HTTP 201 after"), "\(error)")
            #expect(error.message.contains("of \(bytes.count) bytes"), "\(error)")
            #expect(error.message.contains("\(peer.baseURL)/files/x"))
        }
    }

    @Test("a peer that accepts and never reads or answers: the idle timeout ends the upload, naming it")
    func idleTimeout() async throws {
        let peer = try StallingPeer()
        defer { peer.stop() }
        let bytes = sampleBytes(32 * 1024 * 1024)
        let start = clock.now
        do {
            _ = try await URLSessionUpload.upload(
                body(bytes), to: URL(string: "\(peer.baseURL)/x")!, options: UploadOptions(idleTimeout: .milliseconds(500)))
            Issue.record("the upload succeeded")
        } catch let error as BlobStreamError {
            #expect(error.code == .timedOut)
            #expect(error.message.contains("idle timeout") && error.message.contains("0.5 s"), "\(error)")
            #expect(error.message.contains("\(peer.baseURL)/x"))
        }
        let elapsed = clock.now - start
        #expect(elapsed >= .milliseconds(500))
        #expect(elapsed < .milliseconds(1500), "\(elapsed)")
    }

    @Test("a connection that never completes: the connect timeout ends the upload, naming it")
    func connectTimeout() async throws {
        let peer = try StallingPeer(fillBacklog: true)
        defer { peer.stop() }
        let start = clock.now
        do {
            _ = try await URLSessionUpload.upload(
                body(sampleBytes(1000)), to: URL(string: "\(peer.baseURL)/x")!,
                options: UploadOptions(connectTimeout: .milliseconds(500)))
            Issue.record("the upload succeeded")
        } catch let error as BlobStreamError {
            #expect(error.code == .timedOut)
            #expect(error.message.contains("connect timeout"), "\(error)")
        }
        let elapsed = clock.now - start
        #expect(elapsed >= .milliseconds(500))
        #expect(elapsed < .milliseconds(1500), "\(elapsed)")
    }

    @Test("nobody listening: the upload fails in under 1 s")
    func refusedQuickly() async throws {
        let port = try NginxTestServer.freePort()
        let start = clock.now
        await #expect {
            _ = try await URLSessionUpload.upload(self.body(sampleBytes(1000)), to: URL(string: "http://127.0.0.1:\(port)/x")!)
        } throws: { error in
            (error as? BlobStreamError)?.code == .uploadFailed && "\(error)".contains("127.0.0.1:\(port)/x")
        }
        #expect(clock.now - start < .seconds(1))
    }

    @Test("cancelling a running upload to a stalled peer: CancellationError within 1 s")
    func cancellation() async throws {
        let peer = try StallingPeer()
        defer { peer.stop() }
        let bytes = sampleBytes(32 * 1024 * 1024)
        let log = ProgressLog()
        let body = body(bytes)
        let task = Task {
            try await URLSessionUpload.upload(body, to: URL(string: "\(peer.baseURL)/x")!, progress: log.add)
        }
        try await Task.sleep(for: .milliseconds(700))
        #expect((log.all.last?.sent ?? 0) > 0, "the upload was running")
        #expect(log.all.last?.isFinished != true)
        let start = clock.now
        task.cancel()
        let result = await task.result
        let elapsed = clock.now - start
        #expect(elapsed < .seconds(1), "\(elapsed)")
        guard case .failure(let error) = result else {
            Issue.record("the upload succeeded")
            return
        }
        #expect(error is CancellationError, "\(error)")
    }

    @Test("a URL no upload can go to fails before any I/O, naming the URL and what is wrong", arguments: [
        ("http://127.0.0.1:99999/x", "out of range"),
        ("http://127.0.0.1:0/x", "out of range"),
        ("ftp://127.0.0.1/x", "scheme 'ftp'"),
        ("http:///x", "no host"),
        ("http://127.0.0.1/x%00.bin", "%00"),
    ])
    func badURL(url: String, reason: String) async throws {
        guard let value = URL(string: url) else { return }  // Foundation refuses it already
        await #expect {
            _ = try await URLSessionUpload.upload(self.body(sampleBytes(10)), to: value)
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .malformedURL && e!.message.contains(reason) && e!.message.contains(url)
        }
    }
}
