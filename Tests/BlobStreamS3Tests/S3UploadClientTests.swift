import BlobStream
import BlobStreamFiles
import BlobStreamHTTPClient
import BlobStreamS3
import Crypto
import Foundation
import NginxTestServer
import SwiftStoreTestServer
import Testing

/// S3 uploads in the shape every upload client shares: code written against
/// `any UploadClient` uploads to a WebDAV nginx (`HTTPClientUploader`) and to the S3 store
/// (`S3Uploader`) alike, and an S3 failure is a `BlobStreamError` like any other.
@Suite("One upload shape: any UploadClient to nginx and to the S3 store", .serialized)
struct S3UploadClientTests {
    /// What a program written against `UploadClient` does: start the upload, follow its
    /// progress, await its result.
    static func send(
        _ body: UploadBody, with client: any UploadClient, to url: String,
        headers: [(name: String, value: String)] = []
    ) async throws -> (result: UploadResult, reports: [UploadProgress]) {
        let upload = client.upload(body, to: url, headers: headers)
        var reports: [UploadProgress] = []
        for await report in upload.progress { reports.append(report) }
        return (try await upload.result, reports)
    }

    static func md5Hex(_ data: Data) -> String {
        Insecure.MD5.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    @Test(
        "the same code uploads a file to nginx and to the store: the bytes (sha256), the progress to the end",
        arguments: [(1 << 20) | 7, (11 << 20) | 5]) // one PutObject; three parts of 5 MiB
    func sameCodePath(size: Int) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let nginx = try NginxTestServer()
        defer { nginx.stop() }
        let (path, data) = try fixture.file("photo.jpg", count: size, seed: 41)
        let body = try UploadBody.probingLength(contentType: "image/jpeg", name: path) { FileDataSource(path: path) }
        let clients: [(client: any UploadClient, url: String)] = [
            (HTTPClientUploader(), "\(nginx.baseURL)/files/same.jpg"),
            (
                S3Uploader(client: fixture.client, options: S3UploadOptions(partSize: 5 << 20)),
                "s3://\(fixture.bucket)/same.jpg"
            ),
        ]
        var results: [UploadResult] = []
        for (client, url) in clients {
            let (result, reports) = try await Self.send(body, with: client, to: url)
            #expect((200..<300).contains(result.statusCode), "\(url)")
            #expect(reports.filter(\.isFinished).count == 1, "\(url): \(reports)")
            #expect(reports.last == UploadProgress(sent: Int64(size), total: Int64(size), isFinished: true), "\(url)")
            results.append(result)
        }
        #expect(nginx.stored("same.jpg").map(sha256Hex) == sha256Hex(data))
        #expect(sha256Hex(try await fixture.stored("same.jpg")) == sha256Hex(data))

        // The S3 specifics are the result's fields; the body's content type is the object's.
        let s3 = results[1]
        #expect(s3.location == "s3://\(fixture.bucket)/same.jpg")
        #expect(s3.objectSize == Int64(size))
        #expect(s3.bytesSent == Int64(size))
        if size > 5 << 20 {
            #expect(s3.parts == 3 && s3.partsSent == 3 && s3.uploadID != nil)
            #expect(s3.entityTag?.hasSuffix("-3") == true, "\(String(describing: s3.entityTag))")
        } else {
            #expect(s3.parts == 0 && s3.uploadID == nil)
            #expect(s3.entityTag == Self.md5Hex(data))
        }
        let info = try await fixture.client.headObject(fixture.location("same.jpg"))
        #expect(info.etag == s3.entityTag && info.contentType == "image/jpeg")
    }

    @Test("an upload's header fields set the object's: Content-Type, Cache-Control, user metadata")
    func headers() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = Data("an object with headers\n".utf8)
        let client: any UploadClient = S3Uploader(client: fixture.client)
        let body = UploadBody(length: Int64(data.count), contentType: "text/plain") { DataBytesSource(data) }
        _ = try await Self.send(
            body, with: client, to: "s3://\(fixture.bucket)/with/headers.txt",
            headers: [
                ("Content-Type", "text/markdown"), ("Cache-Control", "max-age=60"), ("x-amz-meta-album", "Holidays"),
            ])
        let info = try await fixture.client.headObject(fixture.location("with/headers.txt"))
        #expect(info.contentType == "text/markdown" && info.cacheControl == "max-age=60")
        let answer = try await fixture.client.send(
            "HeadObject", method: .HEAD, location: fixture.location("with/headers.txt"))
        #expect(answer.headers.first(name: "x-amz-meta-album") == "Holidays")
        #expect(try await fixture.stored("with/headers.txt") == data)
    }

    @Test("an S3 failure through any UploadClient is a BlobStreamError naming the key, the status and S3's code")
    func failures() async throws {
        let denied = try await StoreFixture(secret: "not-the-secret")
        defer { denied.cleanUp() }
        let body = UploadBody(length: 5, name: "hello.txt") { DataBytesSource(Data("hello".utf8)) }
        var client: any UploadClient = S3Uploader(client: denied.client)
        let refused = await #expect(throws: BlobStreamError.self) {
            try await client.upload(body, to: "s3://\(denied.bucket)/denied/a.txt").result
        }
        #expect(refused?.code == .permissionDenied, "\(String(describing: refused))")
        #expect(refused?.message.contains("PutObject s3://\(denied.bucket)/denied/a.txt") == true)
        #expect(refused?.message.contains("(HTTP 403") == true, "\(String(describing: refused))")
        #expect(refused?.s3ErrorCode == "SignatureDoesNotMatch" || refused?.s3ErrorCode == "AccessDenied")
        #expect(refused?.s3ErrorCode.map { refused!.message.contains($0) } == true)

        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        client = S3Uploader(client: fixture.client)
        let bucket = SwiftStoreTestServer.uniqueBucketName("absent")
        let missing = await #expect(throws: BlobStreamError.self) {
            try await client.upload(body, to: "s3://\(bucket)/k/b.txt").result
        }
        #expect(missing?.code == .notFound, "\(String(describing: missing))")
        #expect(missing?.message.contains("s3://\(bucket)/k/b.txt") == true)
        #expect(missing?.message.contains("NoSuchBucket") == true && missing?.message.contains("(HTTP 404") == true)
    }

    @Test(
        "not s3://bucket/key, another method than PUT, a header S3 does not take: refused before any I/O, named",
        arguments: [
            ("s3://only-a-bucket", "PUT", "Content-Type", BlobStreamError.Code.malformedURL, "only-a-bucket"),
            ("http://127.0.0.1:9/k", "PUT", "Content-Type", .malformedURL, "http://127.0.0.1:9/k"),
            ("s3://b/k", "POST", "Content-Type", .invalidConfiguration, "not POST"),
            ("s3://b/k", "PUT", "X-Custom", .invalidConfiguration, "not X-Custom"),
        ])
    func refusedBeforeIO(url: String, method: String, header: String, code: BlobStreamError.Code, named: String)
        async throws
    {
        // A store nobody listens on: any I/O would fail with .ioFailed instead.
        var configuration = StoreFixture.configuration(try await SwiftStoreTestServer.shared())
        configuration.endpoint = URL(string: "http://127.0.0.1:9")
        let client: any UploadClient = S3Uploader(client: S3Client(configuration: configuration))
        let body = UploadBody(length: 5) { DataBytesSource(Data("hello".utf8)) }
        let error = await #expect(throws: BlobStreamError.self) {
            try await client.upload(body, to: url, method: method, headers: [(header, "x")]).result
        }
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.message.contains(named) == true, "\(String(describing: error))")
    }

    @Test("connect or idle limits in UploadOptions are refused before any I/O, naming where they are set")
    func limitsRefused() async throws {
        var configuration = StoreFixture.configuration(try await SwiftStoreTestServer.shared())
        configuration.endpoint = URL(string: "http://127.0.0.1:9") // any I/O would be .ioFailed
        let client: any UploadClient = S3Uploader(client: S3Client(configuration: configuration))
        let body = UploadBody(length: 5) { DataBytesSource(Data("hello".utf8)) }
        for options in [UploadOptions(connectTimeout: .seconds(2)), UploadOptions(idleTimeout: .seconds(5))] {
            let error = await #expect(throws: BlobStreamError.self) {
                try await client.upload(body, to: "s3://b/k", options: options).result
            }
            #expect(error?.code == .invalidConfiguration, "\(String(describing: error))")
            #expect(error?.message.contains("S3Client(configuration:connection:)") == true)
            #expect(error?.message.contains("s3://b/k") == true, "\(String(describing: error))")
        }
    }
}
