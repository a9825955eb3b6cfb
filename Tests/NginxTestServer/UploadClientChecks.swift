import BlobStream
import BlobStreamTestSupport
import BlobStreamUpload
import Foundation
import Testing

/// The checks of the upload shape both clients share (`UploadClient`): the result, the
/// progress sequence, cancelling through the handle. Each client's suite runs them.
public struct UploadClientChecks: Sendable {
    let server: NginxTestServer
    let client: any UploadClient
    let clock = ContinuousClock()

    /// Checks `client` against `server`.
    public init(server: NginxTestServer, client: any UploadClient) {
        self.server = server
        self.client = client
    }

    /// 5 MiB + 3 bytes with a known length, then without: the server's copy is identical;
    /// the result has the status, nginx's headers and the bytes sent; the progress sequence
    /// rises, ends with the one finishing report, and ends when the upload does.
    public func resultAndProgress(name: String) async throws {
        for knownLength in [true, false] {
            let bytes = TestData.pseudoRandom(5 * 1024 * 1024 + 3, seed: knownLength ? 5 : 6)
            let total = Int64(bytes.count)
            let body = UploadBody(length: knownLength ? total : nil) { DataBytesSource(bytes) }
            let file = "\(name)-\(knownLength).bin"
            let upload = client.upload(body, to: "\(server.baseURL)/files/\(file)")
            var reports: [UploadProgress] = []
            for await report in upload.progress { reports.append(report) }
            let result = try await upload.result
            #expect(result.statusCode == 201, "\(result.statusCode)")
            #expect(result.bytesSent == total)
            #expect(result.header("server")?.hasPrefix("nginx") == true, "\(result.headers)")
            #expect(server.stored(file) == bytes, "the server's copy differs")
            // Without a body length, a client may still report the source's own (URLSession does).
            #expect(reports.last?.sent == total && reports.last?.isFinished == true, "\(reports.suffix(3))")
            #expect(reports.last?.total == total || !knownLength, "\(reports.suffix(3))")
            #expect(reports.filter(\.isFinished).count == 1)
            #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.sent <= $1.sent })
        }
    }

    /// A non-2xx answer through the handle: `.uploadFailed` naming the status and the URL,
    /// and the progress sequence still ends.
    public func failureThroughTheHandle() async {
        let bytes = TestData.pseudoRandom(100_000, seed: 9)
        let upload = client.upload(
            UploadBody(length: 100_000) { DataBytesSource(bytes) }, to: "\(server.baseURL)/deny/x")
        for await _ in upload.progress {}
        await #expect {
            _ = try await upload.result
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .uploadFailed && e!.message.contains("403") && e!.message.contains("/deny/x")
        }
    }

    /// `cancel()` on a running upload to a stalled peer: `CancellationError` at once (`TestTiming.promptly`), and
    /// the progress sequence ends.
    public func cancelThroughTheHandle() async throws {
        let peer = try StallingPeer()
        defer { peer.stop() }
        let bytes = TestData.pseudoRandom(32 * 1024 * 1024, seed: 4)
        let upload = client.upload(
            UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }, to: "\(peer.baseURL)/x")
        let sentSoFar = SentBytes()
        let reader = Task { () -> UploadProgress? in
            var last: UploadProgress?
            for await report in upload.progress {
                last = report
                sentSoFar.record(report.sent)
            }
            return last
        }
        // Cancelled once it runs (bytes went out), however long a loaded machine takes to get there:
        // in CI's whole suite, URLSession once sent nothing for 10 s (the reports reach this task
        // through the cooperative pool, which the suite's other tests share). What is timed is
        // the cancellation, not the start.
        let running = try await TestTiming.wait(upTo: .seconds(60)) { sentSoFar.value > 0 }
        #expect(running, "the upload sent nothing in 60 s")
        let start = clock.now
        upload.cancel()
        await #expect(throws: CancellationError.self) { _ = try await upload.result }
        let last = await reader.value
        #expect(clock.now - start < TestTiming.scaled(TestTiming.promptly), "\(clock.now - start)")
        #expect((last?.sent ?? 0) > 0, "the upload was running")
        #expect(last?.isFinished != true)
    }

    /// The `URL` form of `upload(_:to:)`: a URL composed with Foundation (a name with a
    /// space and a `%`, percent-encoded by `appendingPathComponent`) stores the file under
    /// its decoded name; a URL no upload can go to fails with `.malformedURL` naming it,
    /// before any I/O.
    public func urlTyped(name: String) async throws {
        let bytes = TestData.pseudoRandom(300_000, seed: 12)
        let file = "\(name) url form 100%.bin"
        let url = try #require(URL(string: server.baseURL)).appendingPathComponent("files").appendingPathComponent(file)
        #expect(url.absoluteString.hasSuffix("url%20form%20100%25.bin"), "\(url.absoluteString)")
        let upload = client.upload(UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }, to: url)
        let result = try await upload.result
        #expect(result.statusCode == 201, "\(result.statusCode)")
        #expect(server.stored(file) == bytes, "the server's copy differs")

        let ftp = try #require(URL(string: "ftp://127.0.0.1:\(server.port)/files/x"))
        let refused = client.upload(UploadBody(length: 1) { DataBytesSource(Data([1])) }, to: ftp)
        await #expect {
            _ = try await refused.result
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .malformedURL && e!.message.contains("ftp://127.0.0.1:\(server.port)/files/x")
        }
    }
}

/// The bytes an upload's progress reported last, shared between the reading task and the test.
final class SentBytes: @unchecked Sendable {
    // Unchecked Sendable: `stored` is touched only with `lock` held.
    private let lock = NSLock()
    private var stored: Int64 = 0

    func record(_ sent: Int64) { lock.withLock { stored = sent } }
    var value: Int64 { lock.withLock { stored } }
}
