import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// Answers cut mid-body by the fault proxy (`cut`: the head and part of the body, then a
/// clean close): never a short object taken for a whole one.
@Suite("Responses cut mid-body", .serialized)
struct S3CutResponseTests {
    @Test("a ranged s3:// read whose GET is cut: an error naming the object and the offset, bytes a true prefix")
    func cutRead() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture(endpoint: proxy.endpoint)
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(300_000, seed: 51)
        _ = try await fixture.client.putObject(fixture.location("cut.bin"), body: ByteBuffer(bytes: data))
        try await proxy.setRules([.cut(method: "GET", path: "cut.bin", nth: 2, afterBytes: 1000)])
        let configuration = fixture.client.configuration
        let url = "s3://\(fixture.bucket)/cut.bin"
        let read = try await readAll {
            try S3Sources.makeSource(
                url: url, configuration: configuration,
                options: HTTPRangeOptions(blockSize: 64 << 10, readAhead: 0, connection: HTTPConnectionOptions()))
        }
        let gets = try await proxy.log().filter { $0.method == "GET" }
        #expect(gets.contains { $0.action == "cut" })
        if let error = read.error {
            #expect(read.last == -1)
            #expect(error.code == .truncated, "\(error)")
            // The second block starts at 65536; 1000 of its bytes arrived.
            #expect(error.message.contains(url) && error.message.contains("offset \(65536 + 1000)"), "\(error)")
            #expect(read.data.count < data.count && read.data == data.prefix(read.data.count))
        } else {
            #expect(read.data == data, "a read that ends cleanly must hold every byte")
        }
    }

    @Test("a part upload whose answer is cut: sent again, the object whole")
    func cutPartAnswer() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture(endpoint: proxy.endpoint)
        defer { fixture.cleanUp() }
        try await proxy.setRules([.cut(method: "PUT", path: "partNumber=2&")])
        let (path, data) = try fixture.file("big", count: 16 << 20, seed: 52)
        let result = try await S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location("cut-part"),
            options: S3UploadOptions(partSize: 5 << 20, retry: HTTPRetryPolicy(initialDelay: .milliseconds(50)))
        ).result
        #expect(result.parts == 4)
        let part2 = try await proxy.log().filter { $0.method == "PUT" && $0.target.contains("partNumber=2&") }
        #expect(part2.map(\.action) == ["cut", "forward"])
        #expect(sha256Hex(try await fixture.stored("cut-part")) == sha256Hex(data))
    }
}
