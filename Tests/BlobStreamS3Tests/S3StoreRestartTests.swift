import BlobStream
import BlobStreamFiles
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// Uploads and downloads while the store (a store of the test's own) is stopped and started
/// again. Serialized: each starts a store of its own (6-7 s of both cores), twice.
@Suite("S3 uploads and downloads when the store goes away", .serialized)
struct S3StoreRestartTests {
    @Test("the store stopped mid-upload: a clear error; started again, --resume completes with the same bytes")
    func storeStoppedAndRestarted() async throws {
        let store = try await SwiftStoreTestServer.start()
        defer { store.stop() }
        let bucket = SwiftStoreTestServer.uniqueBucketName("restart")
        try await store.swiftAPI.createContainer(bucket)
        let client = S3Client(configuration: StoreFixture.configuration(store))
        let data = StoreFixture.bytes(40 << 20, seed: 21)
        // A pipe: its writer holds back everything after 12 MiB until the store is paused,
        // so the third part meets a store that is gone.
        let pipe = Pipe()
        let paused = DispatchSemaphore(value: 0)
        Thread {
            pipe.fileHandleForWriting.write(data.prefix(12 << 20))
            paused.wait()
            pipe.fileHandleForWriting.write(data.dropFirst(12 << 20))
            try? pipe.fileHandleForWriting.close()
        }.start()
        let handle = pipe.fileHandleForReading
        let source = UploadBody(length: nil, repeatable: false, name: "pipe") {
            FileHandleDataSource(fileHandle: handle)
        }
        let location = S3Location(bucket: bucket, key: "restarted")
        var options = S3UploadOptions(
            partSize: 5 << 20, parallelism: 1, retry: HTTPRetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(50)),
            abortsOnFailure: false)

        let upload = S3Uploader(client: client).upload(source, to: location, options: options)
        var didPause = false
        for await report in upload.progress where report.sent > 0 && !didPause {
            await store.pause()
            didPause = true
            paused.signal()
        }
        let error = await #expect(throws: BlobStreamError.self) { try await upload.result }
        #expect(error?.code == .ioFailed)
        #expect(error?.description.contains(store.endpoint.replacingOccurrences(of: "http://", with: "")) == true)

        try await store.restart()
        options.resume = .latest
        let again = UploadBody(length: nil, repeatable: true, name: "the same bytes") { DataBytesSource(data) }
        let result = try await S3Uploader(client: client).upload(again, to: location, options: options).result
        #expect(result.parts == 8)
        #expect(result.partsSent < 8)
        let stored = Data(try await client.getObject(location).readableBytesView)
        #expect(sha256Hex(stored) == sha256Hex(data))
    }

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
