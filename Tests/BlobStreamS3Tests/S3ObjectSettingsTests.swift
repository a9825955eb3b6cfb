import BlobStream
import BlobStreamS3
import Foundation
import SwiftStoreTestServer
import Testing

/// What awscli users reach for on upload: the object's header fields as the store keeps
/// them (HEAD), the store's own checksum support, and one clear error for what it refuses.
@Suite("S3 uploads: object settings and checksums against the store", .serialized)
struct S3ObjectSettingsTests {
    @Test("--cache-control, --content-disposition, --content-encoding: kept, as HEAD shows (single and multipart)")
    func headersKept() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        for (name, count) in [("single", 1000), ("multipart", 11 << 20)] {
            let (path, data) = try fixture.file(name, count: count, seed: 41)
            let result = try await S3Tool.run(
                [
                    "upload", path, "--to", "s3://\(fixture.bucket)/\(name)", "--endpoint-url",
                    fixture.store.endpoint, "--part-size", "5MiB", "--cache-control", "max-age=3600",
                    "--content-disposition", "attachment; filename=\"a.bin\"", "--content-encoding", "identity",
                    "--storage-class", "STANDARD",
                ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
            #expect(result.status == 0, "\(result.stderr)")
            let info = try await fixture.client.headObject(fixture.location(name))
            #expect(info.cacheControl == "max-age=3600", "\(name)")
            #expect(info.contentDisposition == "attachment; filename=\"a.bin\"", "\(name)")
            #expect(info.contentEncoding == "identity", "\(name)")
            #expect(sha256Hex(try await fixture.stored(name)) == sha256Hex(data))
        }
    }

    @Test(
        "what the store refuses: one line naming the setting, and no object",
        arguments: [
            (["--storage-class", "GLACIER"], "the storage class GLACIER"),
            (["--sse", "AES256"], "server-side encryption AES256"),
            (["--tagging", "team=a"], "tagging team=a"),
        ])
    func refused(arguments: [String], named: String) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        for (name, count) in [("single", 1000), ("multipart", 11 << 20)] {
            let (path, _) = try fixture.file(name, count: count, seed: 42)
            let result = try await S3Tool.run(
                ["upload", path, "--to", "s3://\(fixture.bucket)/\(name)", "--endpoint-url", fixture.store.endpoint]
                    + arguments, environment: S3Tool.environment(fixture.store, home: fixture.folder))
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("the store refuses \(named)"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            await #expect(throws: BlobStreamError.self) { try await fixture.client.headObject(fixture.location(name)) }
        }
    }

    @Test("no --content-type: a multipart object gets the type a single PutObject's gets (not application/xml)")
    func contentTypeWithoutOne() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        var types: [String?] = []
        for (name, count) in [("single.txt", 1000), ("multipart.txt", 11 << 20)] {
            let (path, data) = try fixture.file(name, count: count, seed: 43)
            let result = try await S3Tool.run(
                [
                    "upload", path, "--to", "s3://\(fixture.bucket)/\(name)", "--endpoint-url",
                    fixture.store.endpoint, "--part-size", "5MiB",
                ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(sha256Hex(try await fixture.stored(name)) == sha256Hex(data))
            types.append(try await fixture.client.headObject(fixture.location(name)).contentType)
        }
        #expect(types[0] != nil)
        #expect(types[1] == types[0], "\(types)")
    }

    @Test("--checksum-algorithm on one PutObject: the header carries the CRC; the store keeps none, and says nothing")
    func checksumSingle() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let path = fixture.folder.appendingPathComponent("check.txt").path
        try Data("123456789".utf8).write(to: URL(fileURLWithPath: path))
        let result = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/check.txt", "--endpoint-url", proxy.endpoint,
                "--checksum-algorithm", "CRC64NVME",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(result.status == 0, "\(result.stderr)")
        let put = try await proxy.log().filter { $0.method == "PUT" }
        #expect(put.first?.headers["x-amz-checksum-crc64nvme"] == "rosUhgp5mIg=")
        #expect(
            result.stderr.contains(
                "CRC64NVME rosUhgp5mIg= (hex ae8b14860a799888; computed here: the store keeps no S3 checksum)"))
    }

    @Test("--checksum-algorithm on a multipart upload to a store that keeps no S3 checksums: refused before any part")
    func checksumMultipartRefused() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, _) = try fixture.file("big", count: 11 << 20, seed: 43)
        let result = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/big", "--endpoint-url", proxy.endpoint,
                "--part-size", "5MiB", "--checksum-algorithm", "CRC32C",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(result.status == 1)
        #expect(result.stderr.contains("the store keeps no S3 checksums"), "\(result.stderr)")
        let log = try await proxy.log()
        #expect(log.first { $0.method == "POST" }?.headers["x-amz-checksum-algorithm"] == "CRC32C")
        #expect(log.filter { $0.target.contains("partNumber=") }.isEmpty)
        #expect(try await fixture.client.listMultipartUploads(fixture.location("big")).isEmpty)
    }

    @Test(
        "without --checksum-algorithm (when_supported): the full-object CRC-64/NVME asked for on create; the store keeps none, so no part carries one"
    )
    func whenSupported() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("big", count: 11 << 20, seed: 44)
        let result = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/big", "--endpoint-url", proxy.endpoint, "--part-size",
                "5MiB",
            ],
            environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(result.status == 0, "\(result.stderr)")
        let log = try await proxy.log()
        let create = log.first { $0.method == "POST" }
        #expect(create?.headers["x-amz-checksum-algorithm"] == "CRC64NVME")
        #expect(create?.headers["x-amz-checksum-type"] == "FULL_OBJECT")
        let parts = log.filter { $0.target.contains("partNumber=") }
        #expect(parts.count == 3)
        #expect(parts.allSatisfy { part in part.headers.keys.allSatisfy { !$0.hasPrefix("x-amz-checksum-") } })
        #expect(sha256Hex(try await fixture.stored("big")) == sha256Hex(data))
    }
}
