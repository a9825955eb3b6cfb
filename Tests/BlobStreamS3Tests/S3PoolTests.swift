import BlobStream
import BlobStreamFiles
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamTestSupport
import Foundation
import Testing

/// `S3Client(configuration:pool:)`: uploads and s3:// reads of one pool share its client.
@Suite("S3 uploads and reads through one connection pool", .serialized)
struct S3PoolTests {
    @Test("an upload and a read of the same object share the pool's one client; a shut pool is refused by name")
    func oneClient() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("pooled.bin", count: 11_000_017, seed: 41)
        let pool = HTTPClientPool(connection: HTTPConnectionOptions())
        let client = try S3Client(configuration: fixture.client.configuration, pool: pool)
        var uploadOptions = S3UploadOptions()
        uploadOptions.partSize = 5 << 20
        let uploaded = try await S3Uploader(client: client).upload(
            UploadBody(length: nil, repeatable: true, name: path) { FileDataSource(path: path) },
            to: fixture.location("pooled.bin"), options: uploadOptions
        ).result
        #expect(uploaded.parts == 3 && uploaded.objectSize == Int64(data.count))
        var options = HTTPRangeOptions(blockSize: 256 << 10, connection: HTTPConnectionOptions(), pool: pool)
        options.readAhead = 3
        let url = "s3://\(fixture.bucket)/pooled.bin"
        let configuration = fixture.client.configuration
        let read = try await readAll { [options] in
            try S3Sources.makeSource(url: url, configuration: configuration, options: options)
        }
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(read.last == 0)
        #expect(sha256Hex(read.data) == sha256Hex(data))
        #expect(pool.clientCount == 1)
        try await pool.shutdown()
        do {
            _ = try S3Client(configuration: configuration, pool: pool)
            Issue.record("a client was made from a pool that is shut down")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.description.contains(configuration.endpoint?.absoluteString ?? "?"), "\(error)")
        }
    }
}
