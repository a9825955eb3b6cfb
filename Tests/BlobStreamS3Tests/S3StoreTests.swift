import BlobStream
import BlobStreamFiles
import BlobStreamHTTPClient
import BlobStreamS3
import Crypto
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// What the store tests share: the store, a bucket of the test's own, files of known bytes.
struct StoreFixture {
    let store: SwiftStoreTestServer
    let bucket: String
    let client: S3Client
    let folder: URL

    init(secret: String? = nil, endpoint: String? = nil) async throws {
        store = try await SwiftStoreTestServer.shared()
        bucket = SwiftStoreTestServer.uniqueBucketName("s3")
        try await store.swiftAPI.createContainer(bucket)
        var configuration = Self.configuration(store, secret: secret)
        if let endpoint { configuration.endpoint = URL(string: endpoint)! }
        client = S3Client(configuration: configuration)
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("s3-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    static func configuration(_ store: SwiftStoreTestServer, secret: String? = nil) -> S3Configuration {
        S3Configuration(
            credentials: S3Credentials(accessKeyID: store.accessKey, secretAccessKey: secret ?? store.secretKey),
            region: store.region, endpoint: URL(string: store.endpoint)!)
    }

    func location(_ key: String) -> S3Location { S3Location(bucket: bucket, key: key) }

    /// A file of `count` deterministic bytes; its path and the bytes.
    func file(_ name: String, count: Int, seed: UInt64 = 1) throws -> (path: String, data: Data) {
        let data = Self.bytes(count, seed: seed)
        let url = folder.appendingPathComponent(name)
        try data.write(to: url)
        return (url.path, data)
    }

    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var generator = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var bytes = [UInt8](repeating: 0, count: count)
        for i in 0..<count {
            generator ^= generator << 13
            generator ^= generator >> 7
            generator ^= generator << 17
            bytes[i] = UInt8(truncatingIfNeeded: generator)
        }
        return Data(bytes)
    }

    func fileSource(_ path: String) -> UploadBody {
        UploadBody(length: nil, repeatable: true, name: path) { FileDataSource(path: path) }
    }

    /// The object's bytes, read back with GetObject.
    func stored(_ key: String) async throws -> Data {
        Data(try await client.getObject(location(key)).readableBytesView)
    }

    /// The objects Swift holds in the bucket's segments container (parts of unfinished
    /// or aborted uploads), nil when it does not exist.
    func segments(_ key: String) async throws -> [SwiftAPI.StoredObject]? {
        try await store.swiftAPI.list(bucket + "+segments", prefix: key + "/")
    }

    func cleanUp() { try? FileManager.default.removeItem(at: folder) }

    /// Retries that first wait 60 s or more (a test that sees no such wait saw no retry).
    static let slowRetry = HTTPRetryPolicy(
        maxWaiting: .seconds(240), initialDelay: .seconds(120), maxDelay: .seconds(120))
}

func sha256Hex(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

@Suite("S3 uploads against OpenStack Swift's S3 API", .serialized)
struct S3StoreTests {
    @Test("an object over 5 parts × part size: whole, ETag -6, progress to the end")
    func multipart() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("big", count: 27 << 20 | 12345)
        let upload = S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location("dir/big.bin"),
            options: S3UploadOptions(partSize: 5 << 20, parallelism: 4, contentType: "application/x-test"))
        var reports: [Int64] = []
        var finished = false
        for await report in upload.progress {
            reports.append(report.sent)
            finished = finished || report.isFinished
        }
        let result = try await upload.result
        #expect(result.parts == 6 && result.partsSent == 6)
        #expect(result.entityTag?.hasSuffix("-6") == true)
        #expect(result.objectSize == Int64(data.count))
        #expect(finished && reports.last == Int64(data.count))
        var crc64 = S3Checksum(.crc64nvme)
        crc64.update(data)
        #expect(result.crc64nvme == crc64.base64)
        #expect(sha256Hex(try await fixture.stored("dir/big.bin")) == sha256Hex(data))
        let info = try await fixture.client.headObject(fixture.location("dir/big.bin"))
        #expect(info.contentType == "application/x-test")
        let range = try await fixture.client.getObject(
            fixture.location("dir/big.bin"), range: (5 << 20)...((5 << 20) + 9))
        #expect(Data(range.readableBytesView) == data[(5 << 20)...((5 << 20) + 9)])
    }

    @Test("a zero-byte source and a small one go in one PutObject", arguments: [0, 1, 100_000])
    func small(count: Int) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("small", count: count)
        let result = try await S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location("small"),
            options: S3UploadOptions(contentType: "text/plain", metadata: [("Origin", "test")])
        ).result
        #expect(result.parts == 0 && result.uploadID == nil)
        #expect(result.objectSize == Int64(count))
        var crc64 = S3Checksum(.crc64nvme)
        crc64.update(data)
        #expect(result.crc64nvme == crc64.base64)
        #expect(result.entityTag == Insecure.MD5.hash(data: data).map { String(format: "%02x", $0) }.joined())
        #expect(try await fixture.stored("small") == data)
        let info = try await fixture.client.headObject(fixture.location("small"))
        #expect(info.size == Int64(count) && info.contentType == "text/plain")
    }

    @Test("a source that cannot seek (a pipe) goes through the bounded buffer")
    func pipe() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(12 << 20 | 777, seed: 3)
        let pipe = Pipe()
        let writer = Thread {
            pipe.fileHandleForWriting.write(data)
            try? pipe.fileHandleForWriting.close()
        }
        writer.start()
        let handle = pipe.fileHandleForReading
        let source = UploadBody(length: nil, repeatable: false, name: "pipe") {
            FileHandleDataSource(fileHandle: handle)
        }
        let result = try await S3Uploader(client: fixture.client).upload(
            source, to: fixture.location("piped"), options: S3UploadOptions(partSize: 5 << 20, parallelism: 2)
        ).result
        #expect(result.parts == 3 && result.entityTag?.hasSuffix("-3") == true)
        #expect(sha256Hex(try await fixture.stored("piped")) == sha256Hex(data))
    }

    @Test("wrong credentials: a clear error at once, no retries")
    func wrongCredentials() async throws {
        let fixture = try await StoreFixture(secret: "not-the-secret")
        defer { fixture.cleanUp() }
        let (path, _) = try fixture.file("f", count: 6 << 20)
        let started = ContinuousClock.now
        let error = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: fixture.client).upload(
                fixture.fileSource(path), to: fixture.location("denied"),
                options: S3UploadOptions(partSize: 5 << 20, retry: StoreFixture.slowRetry)
            ).result
        }
        // A retry would wait 60 s first; the answer itself comes in far under that even on a
        // loaded machine (7 s seen under ThreadSanitizer with a build beside the suite).
        #expect(ContinuousClock.now - started < .seconds(30), "\(ContinuousClock.now - started)")
        #expect(error?.code == .permissionDenied, "\(String(describing: error))")
        #expect(error?.s3ErrorCode == "SignatureDoesNotMatch" || error?.s3ErrorCode == "AccessDenied")
        #expect(error?.description.contains("s3://\(fixture.bucket)/denied") == true)
        #expect(error?.description.contains("(HTTP 403") == true, "\(String(describing: error))")
    }

    @Test("a store that cannot be reached: a clear error after the bounded attempts")
    func unreachable() async throws {
        let store = try await SwiftStoreTestServer.shared()
        // A port nothing listens on: bind one, note it, close it.
        let port = try closedPort()
        var configuration = StoreFixture.configuration(store)
        configuration.endpoint = URL(string: "http://127.0.0.1:\(port)")
        let started = ContinuousClock.now
        let error = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: S3Client(configuration: configuration)).upload(
                UploadBody(length: nil, repeatable: true, name: "bytes") { DataBytesSource(Data("hello".utf8)) },
                to: S3Location(bucket: "b", key: "k"),
                options: S3UploadOptions(retry: HTTPRetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(50)))
            ).result
        }
        #expect(error?.code == .ioFailed)
        #expect(error?.description.contains("127.0.0.1:\(port)") == true)
        // Bounded by the attempts: a refused connection fails at once, and even an attempt
        // that waits out its 10 s connect timeout (a busy machine) leaves 3 × 10 s, far under
        // what an unbounded retry or the 60 s idle timeout would take.
        #expect(ContinuousClock.now - started < .seconds(35))
    }

    @Test("a source that changes during the upload: an error, and the upload aborted")
    func changedSource() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (first, _) = try fixture.file("v1", count: 11 << 20, seed: 1)
        let (second, _) = try fixture.file("v2", count: 11 << 20, seed: 2)
        let calls = Counter()
        // The first source is one file, the later ones (the parts) another: what a file
        // replaced at its path looks like.
        let source = UploadBody(length: nil, repeatable: true, name: "changing") {
            FileDataSource(path: calls.next() == 0 ? first : second)
        }
        let error = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: fixture.client).upload(
                source, to: fixture.location("changing"), options: S3UploadOptions(partSize: 5 << 20)
            ).result
        }
        #expect(error?.code == .changed)
        #expect(try await fixture.client.listMultipartUploads(fixture.location("changing")).isEmpty)
        await #expect(throws: BlobStreamError.self) {
            try await fixture.client.headObject(fixture.location("changing"))
        }
    }

    @Test("cancellation aborts the upload: no unfinished upload, no segments left")
    func cancellation() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, _) = try fixture.file("big", count: 30 << 20)
        let upload = S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location("cancelled"),
            options: S3UploadOptions(partSize: 5 << 20, parallelism: 1))
        for await report in upload.progress where report.sent > 0 {
            upload.cancel()
            break
        }
        await #expect(throws: CancellationError.self) { try await upload.result }
        #expect(try await fixture.client.listMultipartUploads(fixture.location("cancelled")).isEmpty)
        #expect((try await fixture.segments("cancelled") ?? []).isEmpty)
    }

    @Test("resume after an interrupted upload sends only the missing parts")
    func resume() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("big", count: 26 << 20, seed: 9)
        let options = S3UploadOptions(partSize: 5 << 20, parallelism: 1, abortsOnFailure: false)
        let upload = S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location("resumed"), options: options)
        for await report in upload.progress where report.sent >= 10 << 20 {
            upload.cancel()
            break
        }
        await #expect(throws: CancellationError.self) { try await upload.result }
        let pending = try await fixture.client.listMultipartUploads(fixture.location("resumed"))
        #expect(pending.count == 1)
        let stored = try await fixture.client.listParts(fixture.location("resumed"), uploadID: pending[0].uploadID)
        #expect(stored.count >= 2)

        var again = options
        again.resume = .latest
        let result = try await S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location("resumed"), options: again
        ).result
        #expect(result.uploadID == pending[0].uploadID)
        #expect(result.parts == 6)
        #expect(result.partsSent == 6 - stored.count)
        // The parts found stored count in the object's CRC-64/NVME as those sent do.
        var crc64 = S3Checksum(.crc64nvme)
        crc64.update(data)
        #expect(result.crc64nvme == crc64.base64)
        #expect(sha256Hex(try await fixture.stored("resumed")) == sha256Hex(data))
        #expect(try await fixture.client.listMultipartUploads(fixture.location("resumed")).isEmpty)
    }

    @Test("a part damaged on the way: BadDigest, sent again, the object whole")
    func damagedPart() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture(endpoint: proxy.endpoint)
        defer { fixture.cleanUp() }
        try await proxy.setRules([.corrupt(method: "PUT", path: "partNumber=2&")])
        let (path, data) = try fixture.file("big", count: 16 << 20, seed: 4)
        let result = try await S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location("damaged"),
            options: S3UploadOptions(partSize: 5 << 20, retry: HTTPRetryPolicy(initialDelay: .milliseconds(50)))
        ).result
        #expect(result.parts == 4)
        let part2 = try await proxy.log().filter { $0.method == "PUT" && $0.target.contains("partNumber=2&") }
        #expect(part2.map(\.action) == ["corrupt", "forward"])
        #expect(part2.first?.status == 400)
        #expect(sha256Hex(try await fixture.stored("damaged")) == sha256Hex(data))
    }

    @Test("5xx answers are retried with backoff; too many end in an error, and the upload is aborted")
    func serverErrors() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture(endpoint: proxy.endpoint)
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("big", count: 11 << 20, seed: 6)
        let options = S3UploadOptions(
            partSize: 5 << 20, retry: HTTPRetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(50)))
        try await proxy.setRules([.status(503, method: "PUT", path: "partNumber=1&", times: 2)])
        let result = try await S3Uploader(client: fixture.client).upload(
            fixture.fileSource(path), to: fixture.location("retried"), options: options
        ).result
        #expect(result.parts == 3)
        #expect(sha256Hex(try await fixture.stored("retried")) == sha256Hex(data))

        try await proxy.clearLog()
        try await proxy.setRules([.status(500, method: "PUT", path: "partNumber=3&", times: 0)])
        let error = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: fixture.client).upload(
                fixture.fileSource(path), to: fixture.location("failed"), options: options
            ).result
        }
        #expect(error?.code == .uploadFailed, "\(String(describing: error))")
        #expect(error?.description.contains("(HTTP 500") == true, "\(String(describing: error))")
        #expect(error?.description.contains("UploadPart 3 s3://\(fixture.bucket)/failed") == true)
        let attempts = try await proxy.log().filter { $0.method == "PUT" && $0.target.contains("partNumber=3&") }
        #expect(attempts.count == 3)
        #expect(try await fixture.client.listMultipartUploads(fixture.location("failed")).isEmpty)
        #expect((try await fixture.segments("failed") ?? []).isEmpty)
    }

    @Test("resume with no unfinished upload is a clear error")
    func resumeNothing() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, _) = try fixture.file("f", count: 11 << 20)
        let error = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: fixture.client).upload(
                fixture.fileSource(path), to: fixture.location("none"),
                options: S3UploadOptions(partSize: 5 << 20, resume: .latest)
            ).result
        }
        #expect(error?.code == .noUploadToResume)
    }
}

/// Hands out 0, 1, 2, … across threads.
final class Counter: Sendable {
    private let value = Locked(0)
    func next() -> Int {
        value.withLock { v in
            defer { v += 1 }
            return v
        }
    }
}

/// A loopback port that was free a moment ago and has nothing listening.
func closedPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    try withUnsafeMutablePointer(to: &address) { pointer in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            guard bind(fd, $0, length) == 0, getsockname(fd, $0, &length) == 0 else {
                throw POSIXError(.EADDRINUSE)
            }
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
