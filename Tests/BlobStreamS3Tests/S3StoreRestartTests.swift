import BlobStream
import BlobStreamFiles
import BlobStreamS3
import Foundation
import SwiftStoreTestServer
import Testing

@Suite("S3 uploads when the store goes away")
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
        let source = S3UploadSource(name: "pipe", isRepeatable: false) { FileHandleDataSource(fileHandle: handle) }
        let location = S3Location(bucket: bucket, key: "restarted")
        var options = S3UploadOptions(
            partSize: 5 << 20, parallelism: 1, maxAttempts: 2, retryDelay: .milliseconds(50), abortsOnFailure: false)

        let upload = S3Uploader(client: client).upload(source, to: location, options: options)
        var didPause = false
        for await report in upload.progress where report.sent > 0 && !didPause {
            await store.pause()
            didPause = true
            paused.signal()
        }
        let error = await #expect(throws: S3Error.self) { try await upload.result }
        #expect(error?.code == .connectionFailed)
        #expect(error?.description.contains(store.endpoint.replacingOccurrences(of: "http://", with: "")) == true)

        try await store.restart()
        options.resume = .latest
        let again = S3UploadSource(name: "the same bytes", isRepeatable: true) { DataBytesSource(data) }
        let result = try await S3Uploader(client: client).upload(again, to: location, options: options).result
        #expect(result.parts == 8)
        #expect(result.partsSent < 8)
        let stored = Data(try await client.getObject(location).readableBytesView)
        #expect(sha256Hex(stored) == sha256Hex(data))
    }
}
