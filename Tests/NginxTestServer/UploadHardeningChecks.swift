import BlobStream
import BlobStreamTestSupport
import BlobStreamUpload
import Foundation
import Testing

/// The checks the URLSession and the AsyncHTTPClient hardening suites share: redirects not
/// followed, early answers, time limits, refused connections and cancellation, against real
/// peers on 127.0.0.1. Each suite names its tests and runs these with its own upload.
public struct UploadHardeningChecks: Sendable {
    /// Sends `body` to `url` with `options`, reporting to `progress`.
    public typealias Upload =
        @Sendable (
            _ body: UploadBody, _ url: String, _ options: UploadOptions,
            _ progress: (@Sendable (UploadProgress) -> Void)?
        ) async throws -> Void

    let server: NginxTestServer
    let seed: UInt64
    let upload: Upload
    let clock = ContinuousClock()

    /// Checks `upload` against `server`, with bodies of pseudo-random bytes from `seed`.
    public init(server: NginxTestServer, seed: UInt64, upload: @escaping Upload) {
        self.server = server
        self.seed = seed
        self.upload = upload
    }

    /// Checks `client`'s `upload(...)`: progress read from its `progress` sequence, the
    /// upload awaited through its `result` (cancelling the checking task cancels it).
    public init(server: NginxTestServer, seed: UInt64, client: any UploadClient) {
        self.init(server: server, seed: seed) { body, url, options, progress in
            let upload = client.upload(body, to: url, options: options)
            for await report in upload.progress { progress?(report) }
            _ = try await upload.result
        }
    }

    func sampleBytes(_ count: Int) -> Data { TestData.pseudoRandom(count, seed: seed) }

    func body(_ bytes: Data, knownLength: Bool = true) -> UploadBody {
        UploadBody(length: knownLength ? Int64(bytes.count) : nil) { DataBytesSource(bytes) }
    }

    /// A 303 (not followed) and a redirect loop: errors naming the redirect, nothing stored.
    public func redirectsNotFollowed() async {
        let bytes = sampleBytes(100_000)
        await #expect {
            try await upload(body(bytes), "\(server.baseURL)/redirect-303/see.bin", UploadOptions(), nil)
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .uploadFailed && e!.message.contains("HTTP 303") && e!.message.contains("/files/see.bin")
                && e!.message.contains("/redirect-303/see.bin")
        }
        #expect(server.stored("see.bin") == nil)
        await #expect {
            try await upload(body(bytes), "\(server.baseURL)/loop/x", UploadOptions(maxRedirects: 3), nil)
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .uploadFailed && e!.message.contains("more than 3 redirects")
                && e!.message.contains("/loop/x")
        }
    }

    /// A 307 of a body that cannot be read again (a pipe's), to `pipe.bin`: an error naming
    /// the redirect, nothing stored.
    public func redirectOfOneShotBody(_ body: UploadBody) async {
        await #expect {
            try await upload(body, "\(server.baseURL)/redirect-307/pipe.bin", UploadOptions(), nil)
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .uploadFailed && e!.message.contains("HTTP 307") && e!.message.contains("/files/pipe.bin")
                && e!.message.contains("cannot be read again")
        }
        #expect(server.stored("pipe.bin") == nil)
    }

    /// A 201 after the first 1 MB of 16 MB: an error with bytes sent / length, never success.
    public func earlyAnswer(drain: Bool, knownLength: Bool = true) async throws {
        let peer = try EarlyAnswerPeer(answerAfter: 1 << 20, drain: drain)
        defer { peer.stop() }
        let bytes = sampleBytes(16 * 1024 * 1024)
        do {
            try await upload(body(bytes, knownLength: knownLength), "\(peer.baseURL)/files/x", UploadOptions(), nil)
            Issue.record("the upload succeeded")
        } catch let error as BlobStreamError {
            #expect(error.code == .uploadFailed)
            #expect(error.message.contains("\(peer.baseURL)/files/x"), "\(error)")
            if error.message.contains("answered HTTP 201 after") {
                #expect(
                    error.message.contains(knownLength ? "of \(bytes.count) bytes" : "before the body's end"),
                    "\(error)")
            } else {
                // A peer that closes with body bytes unread makes its kernel reset the
                // connection (TCP sends RST), and the reset can reach the client before the
                // 201 is read: then the upload fails on the connection instead. Either way it
                // is not a success; only the draining peer guarantees the 201 is seen.
                #expect(!drain, "a draining peer's answer must be seen: \(error)")
            }
        }
    }

    /// A peer that never reads or answers: the idle timeout (0.5 s) ends the upload, naming it.
    public func idleTimeout() async throws {
        let peer = try StallingPeer()
        defer { peer.stop() }
        let bytes = sampleBytes(32 * 1024 * 1024)
        let start = clock.now
        do {
            try await upload(body(bytes), "\(peer.baseURL)/x", UploadOptions(idleTimeout: .milliseconds(500)), nil)
            Issue.record("the upload succeeded")
        } catch let error as BlobStreamError {
            #expect(error.code == .timedOut)
            #expect(error.message.contains("idle timeout") && error.message.contains("0.5 s"), "\(error)")
            #expect(error.message.contains("\(peer.baseURL)/x"))
        }
        let elapsed = clock.now - start
        #expect(elapsed >= .milliseconds(500))
        // Far under the clients' defaults (60 s and more): the 0.5 s setting ended it. Not
        // tighter: with the suite's servers (nginx, the object store) and builds sharing 2 cores
        // it took up to 3.1 s.
        #expect(elapsed < TestTiming.scaled(.seconds(10)), "\(elapsed)")
    }

    /// A connection that never completes: the connect timeout (0.5 s) ends the upload.
    public func connectTimeout() async throws {
        let peer = try StallingPeer(fillBacklog: true)
        defer { peer.stop() }
        let start = clock.now
        do {
            try await upload(
                body(sampleBytes(1000)), "\(peer.baseURL)/x", UploadOptions(connectTimeout: .milliseconds(500)), nil)
            Issue.record("the upload succeeded")
        } catch let error as BlobStreamError {
            #expect(error.code == .timedOut)
            #expect(error.message.contains("connect timeout") && error.message.contains("0.5 s"), "\(error)")
        }
        let elapsed = clock.now - start
        #expect(elapsed >= .milliseconds(500))
        // Under the default connect timeout (10 s): the 0.5 s setting ended it. Not tighter: with
        // the suite's servers (nginx, the object store) and builds sharing 2 cores it took up to
        // 3.1 s, and 10.8 s under ThreadSanitizer beside a 900 s upload test, where the message
        // naming 0.5 s is what tells the setting from the default.
        #expect(elapsed < TestTiming.scaled(.seconds(10)), "\(elapsed)")
    }

    /// Nobody listening: the upload fails at once (well before the connect timeout), naming the URL.
    public func refusedQuickly() async throws {
        let port = try NginxTestServer.freePort()
        let start = clock.now
        await #expect {
            try await upload(body(sampleBytes(1000)), "http://127.0.0.1:\(port)/x", UploadOptions(), nil)
        } throws: { error in
            (error as? BlobStreamError)?.code == .uploadFailed && "\(error)".contains("127.0.0.1:\(port)/x")
        }
        #expect(clock.now - start < TestTiming.scaled(TestTiming.promptly), "\(clock.now - start)")
    }

    /// Cancelling a running upload to a stalled peer: `CancellationError` at once (`TestTiming.promptly`).
    public func cancellation() async throws {
        let peer = try StallingPeer()
        defer { peer.stop() }
        let bytes = sampleBytes(32 * 1024 * 1024)
        let log = ConcurrentLog<UploadProgress>()
        let body = body(bytes)
        let upload = upload
        let task = Task {
            try await upload(body, "\(peer.baseURL)/x", UploadOptions(), log.add)
        }
        // Well into the upload (64 KiB handed over, less than the kernel buffers of a peer that
        // never reads), as a user would cancel it; however long a loaded machine takes to get
        // there (what is timed is the cancellation, not the start).
        let running = try await TestTiming.wait(upTo: .seconds(60)) { (log.all.last?.sent ?? 0) >= 64 << 10 }
        #expect(running, "the upload was running")
        #expect(log.all.last?.isFinished != true)
        let start = clock.now
        task.cancel()
        let result = await task.result
        let elapsed = clock.now - start
        #expect(elapsed < TestTiming.scaled(TestTiming.promptly), "\(elapsed)")
        guard case .failure(let error) = result else {
            Issue.record("the upload succeeded")
            return
        }
        #expect(error is CancellationError, "\(error)")
    }
}
