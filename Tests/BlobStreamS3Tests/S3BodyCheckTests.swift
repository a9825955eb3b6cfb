import BlobStream
import BlobStreamCompression
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// Each request carries exactly one check of its body that the signature covers, and a check
/// counts only if the store refuses a wrong value: a part damaged on the way (FaultProxy
/// flips one byte) must be refused and sent again. OpenStack Swift 2.30's s3api verifies the
/// signed payload SHA-256 and `Content-MD5`, and stores `x-amz-checksum-…` without checking.
@Suite("S3 uploads: one body check, the store refuses a wrong one", .serialized)
struct S3BodyCheckTests {
    /// A 3-part upload through a proxy that damages part 2 once; the parts' requests as the
    /// proxy saw them, the result, and the source's bytes.
    static func damagedUpload(_ key: String, options: S3UploadOptions) async throws -> (
        parts: [FaultProxy.Seen], result: UploadResult, data: Data, stored: Data
    ) {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture(endpoint: proxy.endpoint)
        defer { fixture.cleanUp() }
        try await proxy.setRules([.corrupt(method: "PUT", path: "partNumber=2&")])
        let (path, data) = try fixture.file(key, count: 11 << 20, seed: 21)
        let result = try await S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location(key), options: options
        ).result
        let parts = try await proxy.log().filter { $0.method == "PUT" && $0.target.contains("partNumber=") }
        return (parts, result, data, try await fixture.stored(key))
    }

    static var options: S3UploadOptions {
        S3UploadOptions(partSize: 5 << 20, retry: HTTPRetryPolicy(initialDelay: .milliseconds(50)))
    }

    @Test(
        "by default (http, a store that keeps no S3 checksums): the signed payload SHA-256 alone; a wrong one is refused"
    )
    func payloadSHA256() async throws {
        let (parts, result, data, stored) = try await Self.damagedUpload("sha256", options: Self.options)
        #expect(result.parts == 3)
        for part in parts {
            #expect(part.headers["x-amz-content-sha256"]?.count == 64, "\(part.target)")
            #expect(part.headers["content-md5"] == nil, "\(part.target)")
            #expect(part.headers.keys.allSatisfy { !$0.hasPrefix("x-amz-checksum-") }, "\(part.target)")
        }
        let part2 = parts.filter { $0.target.contains("partNumber=2&") }
        #expect(part2.map(\.action) == ["corrupt", "forward"])
        #expect(part2.first?.status == 400)
        #expect(sha256Hex(stored) == sha256Hex(data))
    }

    @Test("Content-MD5 with UNSIGNED-PAYLOAD: the one check; a wrong one is refused")
    func contentMD5() async throws {
        var options = Self.options
        options.bodyCheck = .contentMD5
        let (parts, result, data, stored) = try await Self.damagedUpload("md5", options: options)
        #expect(result.parts == 3)
        for part in parts {
            #expect(part.headers["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD", "\(part.target)")
            #expect(part.headers["content-md5"]?.count == 24, "\(part.target)")
        }
        let part2 = parts.filter { $0.target.contains("partNumber=2&") }
        #expect(part2.map(\.action) == ["corrupt", "forward"])
        #expect(part2.first?.status == 400)
        #expect(sha256Hex(stored) == sha256Hex(data))
    }

    @Test("Swift 2.30 stores x-amz-checksum-… without checking it: a damaged body with a wrong CRC is taken")
    func checksumNotVerified() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture(endpoint: proxy.endpoint)
        defer { fixture.cleanUp() }
        try await proxy.setRules([.corrupt(method: "PUT")])
        let (path, data) = try fixture.file("small", count: 1 << 20, seed: 22)
        var options = Self.options
        options.checksumAlgorithm = .crc32c
        options.bodyCheck = .checksum
        let result = try await S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location("unchecked"), options: options
        ).result
        let puts = try await proxy.log().filter { $0.method == "PUT" }
        #expect(puts.map(\.action) == ["corrupt"])
        #expect(puts.first?.status == 200)
        #expect(puts.first?.headers["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD")
        var crc = S3Checksum(.crc32c)
        crc.update(data)
        #expect(puts.first?.headers["x-amz-checksum-crc32c"] == crc.base64)
        #expect(result.checksumStored == false)
        // The store kept the damaged bytes: this check is never the one chosen for it.
        #expect(sha256Hex(try await fixture.stored("unchecked")) != sha256Hex(data))
    }

    @Test("the checksum body check on a store that keeps no S3 checksums: refused before any part is sent")
    func checksumCheckRefused() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture(endpoint: proxy.endpoint)
        defer { fixture.cleanUp() }
        let (path, _) = try fixture.file("big", count: 11 << 20, seed: 23)
        var options = Self.options
        options.bodyCheck = .checksum
        let error = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: fixture.client).upload(
                fixture.fileSource(path), to: fixture.location("refused"), options: options
            ).result
        }
        #expect(error?.code == .checksumNotSupported)
        let log = try await proxy.log()
        #expect(log.filter { $0.target.contains("partNumber=") }.isEmpty)
        #expect(try await fixture.client.listMultipartUploads(fixture.location("refused")).isEmpty)
    }

    @Test("a resumed upload compares the stored parts with the source: a changed part is sent again")
    func resumeCompares() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let location = fixture.location("resumed-check")
        let (path, data) = try fixture.file("big", count: 11 << 20, seed: 24)
        // Parts 1 and 2 stored from other bytes (part 2) and the same bytes (part 1).
        let id = try await fixture.client.createMultipartUpload(location)
        let part1 = data.prefix(5 << 20)
        let wrong2 = StoreFixture.bytes(5 << 20, seed: 99)
        _ = try await fixture.client.uploadPart(location, uploadID: id, number: 1, body: .init(bytes: part1))
        _ = try await fixture.client.uploadPart(location, uploadID: id, number: 2, body: .init(bytes: wrong2))
        // The store's listing may lag behind: wait until it lists both parts.
        let listed = try await SwiftStoreTestServer.poll(upTo: .seconds(30)) {
            try await fixture.client.listParts(location, uploadID: id).count >= 2
        }
        try #require(listed, "the store did not list parts 1 and 2 of upload \(id) within 30 s")
        var options = Self.options
        options.resume = .uploadID(id)
        let result = try await S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: location, options: options
        ).result
        #expect(result.parts == 3)
        #expect(result.partsSent == 2)
        #expect(sha256Hex(try await fixture.stored("resumed-check")) == sha256Hex(data))
    }
}
