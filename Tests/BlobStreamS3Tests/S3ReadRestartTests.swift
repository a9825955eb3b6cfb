import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// An `s3://` download while the store (OpenStack Swift, a store of the test's own) is
/// stopped and started again: the ranges that meet the stopped store are asked again at
/// their offsets until it is back, and the read ends whole.
@Suite("S3 reads when the store restarts")
struct S3ReadRestartTests {
    @Test("the store stopped mid-download and started again within the retry budget: the read ends whole")
    func storeRestartedMidDownload() async throws {
        let store = try await SwiftStoreTestServer.start()
        defer { store.stop() }
        let bucket = SwiftStoreTestServer.uniqueBucketName("readrestart")
        try await store.swiftAPI.createContainer(bucket)
        let configuration = StoreFixture.configuration(store)
        let data = StoreFixture.bytes(12 << 20, seed: 81)
        let location = S3Location(bucket: bucket, key: "restarted.bin")
        _ = try await S3Client(configuration: configuration).putObject(location, body: ByteBuffer(bytes: data))
        // A store takes 6-7 s to start: waits of 0.25-2 s, up to 30 s in all.
        var options = HTTPRangeOptions(blockSize: 1 << 20, readAhead: 1, connection: HTTPConnectionOptions())
        options.retry = HTTPRetryPolicy(
            maxAttempts: 40, maxWaiting: .seconds(30), initialDelay: .milliseconds(500), maxDelay: .seconds(2))
        let stream = Handoff(
            BlobInputStream(
                dataSource: try S3Sources.makeSource(
                    url: location.description, configuration: configuration, options: options)))
        // The first 3 MiB while the store runs.
        let head = try await offThePool { () -> Data in
            stream.value.open()
            var out = Data()
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while out.count < 3 << 20 {
                let n = stream.value.read(&buffer, maxLength: buffer.count)
                if n <= 0 { break }
                out.append(buffer, count: n)
            }
            return out
        }
        #expect(head.count == 3 << 20)
        await store.pause()
        async let restarted: Void = store.restart()
        let rest = try await offThePool { () -> (Data, Int, BlobStreamError?) in
            defer { stream.value.close() }
            let (data, last) = stream.value.readToEnd(chunkSize: 64 << 10)
            return (data, last, stream.value.dataSource.error as? BlobStreamError)
        }
        try await restarted
        #expect(rest.2 == nil, "\(String(describing: rest.2))")
        #expect(rest.1 == 0)
        #expect(sha256Hex(head + rest.0) == sha256Hex(data))
    }
}
