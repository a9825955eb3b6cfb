import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// `--resume` without an id: the listing asked again while empty (the store's listing lags),
/// several unfinished uploads refused rather than guessed; the tool shows the upload id when
/// it starts and, with `--keep-parts`, how to resume when it fails.
@Suite("Finding the upload to resume", .serialized)
struct S3ResumeLookupTests {
    /// Waits until the store lists `count` unfinished uploads of `location` (its container
    /// listings are updated in the background).
    func waitForListing(_ fixture: StoreFixture, _ location: S3Location, count: Int) async throws -> [S3PendingUpload] {
        var pending: [S3PendingUpload] = []
        _ = try await SwiftStoreTestServer.poll(upTo: .seconds(20)) {
            pending = try await fixture.client.listMultipartUploads(location)
            return pending.count >= count
        }
        return pending
    }

    /// Two unfinished uploads of `key`, the second started over a second after the first.
    func twoUploads(_ fixture: StoreFixture, _ key: String) async throws -> (older: String, newer: String) {
        let older = try await fixture.client.createMultipartUpload(fixture.location(key))
        // The sleep is the point: the store dates an upload to the second, and "newest" must
        // be told apart by that date.
        try await Task.sleep(for: .milliseconds(1100))
        let newer = try await fixture.client.createMultipartUpload(fixture.location(key))
        let listed = try await waitForListing(fixture, fixture.location(key), count: 2)
        try #require(listed.count == 2, "the store did not list both uploads: \(listed)")
        return (older, newer)
    }

    @Test("several unfinished uploads: refused, listed newest first; .newest takes the newer")
    func several() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let location = fixture.location("two")
        let (older, newer) = try await twoUploads(fixture, "two")
        let error = await #expect(throws: BlobStreamError.self) {
            try await fixture.client.findUploadToResume(location, lookup: S3ResumeLookup(whenSeveral: .refuse))
        }
        #expect(error?.code == .severalUploadsToResume)
        let message = error?.message ?? ""
        let at = { (id: String) in message.range(of: id)?.lowerBound }
        #expect(at(newer) != nil && at(older) != nil && at(newer)! < at(older)!, "\(message)")
        #expect(message.contains("s3://\(fixture.bucket)/two"))
        let chosen = try await fixture.client.findUploadToResume(location)
        #expect(chosen.uploadID == newer)
        for id in [older, newer] { try await fixture.client.abortMultipartUpload(location, uploadID: id) }
    }

    @Test("nothing to resume: the listing is asked maxAttempts times with a jittered backoff, then a clear error")
    func nothingAfterRetries() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture(endpoint: proxy.endpoint)
        defer { fixture.cleanUp() }
        let started = ContinuousClock.now
        let error = await #expect(throws: BlobStreamError.self) {
            try await fixture.client.findUploadToResume(
                fixture.location("none"),
                lookup: S3ResumeLookup(retry: HTTPRetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(100))))
        }
        #expect(error?.code == .noUploadToResume)
        #expect(error?.message.contains("s3://\(fixture.bucket)/none") == true)
        // Waits of 100 ms, then 200 ms, each jittered to between half and all of it.
        #expect(ContinuousClock.now - started >= .milliseconds(150))
        // The proxy logs a request once its answer is relayed: wait for the last entry.
        let isListing = { @Sendable (seen: FaultProxy.Seen) in seen.method == "GET" && seen.target.contains("uploads") }
        let listings = await proxy.log(until: { $0.filter(isListing).count >= 3 }).filter(isListing)
        #expect(listings.count == 3)
    }

    @Test("the tool: --resume with several unfinished uploads exits 1 and lists them newest first")
    func toolRefusesSeveral() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (older, newer) = try await twoUploads(fixture, "tool-two")
        let (path, _) = try fixture.file("f", count: 11 << 20, seed: 41)
        let result = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/tool-two", "--endpoint-url", fixture.store.endpoint,
                "--part-size", "5MiB", "--resume",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(result.status == 1)
        let at = { (id: String) in result.stderr.range(of: id)?.lowerBound }
        #expect(at(newer) != nil && at(older) != nil && at(newer)! < at(older)!, "\(result.stderr)")
        // Nothing was sent to either upload.
        let location = fixture.location("tool-two")
        #expect(try await fixture.client.listParts(location, uploadID: older).isEmpty)
        #expect(try await fixture.client.listParts(location, uploadID: newer).isEmpty)
        for id in [older, newer] { try await fixture.client.abortMultipartUpload(location, uploadID: id) }
    }

    @Test("the tool shows the upload id; with --keep-parts a failure says how to resume, and that resume works")
    func toolShowsIDAndResumes() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("big", count: 16 << 20, seed: 42)
        let to = "s3://\(fixture.bucket)/kept"
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        let arguments = ["upload", path, "--to", to, "--part-size", "5MiB", "--parallel", "1"]
        try await proxy.setRules([.status(500, method: "PUT", path: "partNumber=3&", times: 0)])
        let failed = try await S3Tool.run(
            arguments + ["--endpoint-url", proxy.endpoint, "--keep-parts"], environment: environment)
        #expect(failed.status == 1)
        let started = try #require(
            failed.stderr.split(separator: "\n").first { $0.hasPrefix("started multipart upload ") },
            "\(failed.stderr)")
        let id = String(started.dropFirst("started multipart upload ".count).prefix { $0 != " " })
        #expect(started.hasSuffix(" of \(to)"))
        #expect(failed.stderr.contains("UploadPart 3"), "\(failed.stderr)")
        #expect(failed.stderr.contains("multipart upload \(id) is left open on the store"), "\(failed.stderr)")
        #expect(
            failed.stderr.contains("resume it with `blobstream upload \(path) --to \(to) --upload-id \(id) "),
            "\(failed.stderr)")
        #expect(failed.stderr.contains("or abort it with `blobstream upload --abort --upload-id \(id) --to \(to) "))

        let resumed = try await S3Tool.run(
            arguments + ["--endpoint-url", store.endpoint, "--upload-id", id], environment: environment)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("continuing multipart upload \(id) of \(to)"), "\(resumed.stderr)")
        // The parts stored are not sent again (unless the store's listing lags behind: then they are).
        #expect(resumed.stderr.contains("in 4 parts"), "\(resumed.stderr)")
        #expect(sha256Hex(try await fixture.stored("kept")) == sha256Hex(data))
    }
}
