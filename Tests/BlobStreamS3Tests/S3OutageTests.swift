import BlobStream
import BlobStreamS3
import Foundation
import SwiftStoreTestServer
import Testing

/// An upload rides through what a remote read rides through: the store answering 503 to
/// everything for a few seconds. Its requests are tried again as reads' are
/// (`HTTPRetryPolicy`: jittered waits of about 1, 2, 4, 8 s).
@Suite("S3 uploads through a store that is down for a few seconds", .serialized)
struct S3OutageTests {
    @Test("503 to every request for 4 s mid-upload: the upload ends whole (exit 0, the object's sha256)")
    func outageMidUpload() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let proxy = try await FaultProxy.start(upstream: fixture.store.endpoint)
        defer { proxy.stop() }
        // Each part held 0.3 s; the third part begins 4 s during which every request is
        // answered 503 (the proxy keeps the time: the test need not be scheduled meanwhile).
        try await proxy.setRules([
            .outage(4, method: "PUT", path: "partNumber=", nth: 3),
            .delay(0.3, method: "PUT", path: "partNumber=", times: 0),
        ])
        let (path, data) = try fixture.file("big", count: 30 << 20 | 17, seed: 71)
        let result = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/outage.bin", "--endpoint-url", proxy.endpoint,
                "--part-size", "5MiB", "--parallel", "2",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        let log = try await proxy.log()
        // The outage was met: some request of the upload was refused.
        let refused = log.filter { $0.action == "outage" }
        #expect(refused.count >= 2, "\(log.map(\.target))")
        #expect(refused.allSatisfy { $0.status == 503 })
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("in 7 parts"), "\(result.stderr)")
        #expect(sha256Hex(try await fixture.stored("outage.bin")) == sha256Hex(data))
    }
}
