import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// Reads at the end of an object: Swift's s3api answers 416 (`InvalidRange`, without the
/// object's length) to a Range that starts at the object's size.
@Suite("s3:// reads at and past the end of an object", .serialized)
struct S3RangeEndTests {
    func source(_ fixture: StoreFixture, _ key: String, endpoint: String? = nil)
        -> @Sendable () throws -> any BlobDataSource
    {
        var configuration = fixture.client.configuration
        if let endpoint { configuration.endpoint = URL(string: endpoint)! }
        let url = "s3://\(fixture.bucket)/\(key)"
        return { [configuration] in
            try S3Sources.makeSource(
                url: url, configuration: configuration,
                options: HTTPRangeOptions(blockSize: 64 << 10, connection: HTTPConnectionOptions()))
        }
    }

    @Test("a zero-byte object: a clean end at once, length 0")
    func empty() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        _ = try await fixture.client.putObject(fixture.location("empty"), body: ByteBuffer())
        let read = try await readAll(source(fixture, "empty"))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(read.last == 0)
        #expect(read.data.isEmpty)
        #expect(read.length == 0)
    }

    @Test(
        "offsets at the end, the last byte, and past the end (an error naming the object)",
        arguments: [(1000, 0), (999, 1), (0, 1000), (1001, -1), (5000, -1)])
    func offsets(offset: Int, expected: Int) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(1000, seed: 91)
        _ = try await fixture.client.putObject(fixture.location("k/thousand"), body: ByteBuffer(bytes: data))
        let read = try await readAll(from: Int64(offset), source(fixture, "k/thousand"))
        if expected >= 0 {
            #expect(read.error == nil, "\(String(describing: read.error))")
            #expect(read.last == 0)
            #expect(read.data == data.suffix(expected))
            #expect(read.length == 1000)
        } else {
            #expect(read.last == -1)
            #expect(read.data.isEmpty)
            #expect(read.error?.code == .invalidOffset, "\(String(describing: read.error))")
            let message = read.error?.message ?? ""
            #expect(
                message.contains("s3://\(fixture.bucket)/k/thousand") && message.contains("\(offset)"), "\(message)")
            #expect(message.contains("1000 bytes"), "\(message)")
        }
    }

    @Test("a 416 for an offset below the length is an error, never an end")
    func unsatisfiableInside() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(1000, seed: 92)
        _ = try await fixture.client.putObject(fixture.location("inside"), body: ByteBuffer(bytes: data))
        let proxy = try await FaultProxy.start(upstream: fixture.store.endpoint)
        defer { proxy.stop() }
        try await proxy.setRules([.status(416, code: "InvalidRange", method: "GET", path: "inside")])
        let read = try await readAll(from: 10, source(fixture, "inside", endpoint: proxy.endpoint))
        #expect(read.last == -1)
        #expect(read.data.isEmpty)
        #expect(read.error?.code == .httpFailed, "\(String(describing: read.error))")
        #expect(read.error?.message.contains("s3://\(fixture.bucket)/inside") == true)
        #expect(read.error?.message.contains("1000 bytes long") == true, "\(String(describing: read.error))")
        // The proxy logs a request once it has relayed the answer: the HEAD's entry may come
        // just after the read is over.
        let seen = await proxy.log(until: { $0.count >= 2 }).map(\.method)
        #expect(seen == ["GET", "HEAD"])
    }
}
