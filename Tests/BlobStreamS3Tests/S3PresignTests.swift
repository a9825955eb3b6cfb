import BlobStream
import BlobStreamS3
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// Presigned URLs: AWS's published example, and URLs fetched by curl from the store; an
/// expired or changed URL is refused.
@Suite("S3 presigned URLs", .serialized)
struct S3PresignTests {
    @Test("AWS's example: GET /test.txt of examplebucket, 20130524T000000Z, 86400 s")
    func awsExample() throws {
        let configuration = S3Configuration(
            credentials: S3Credentials(
                accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1", endpoint: URL(string: "https://s3.amazonaws.com")!, usesPathStyle: false)
        let date = Date(timeIntervalSince1970: 1_369_353_600) // 2013-05-24T00:00:00Z
        let url = try configuration.presignedURL(
            for: S3Location(bucket: "examplebucket", key: "test.txt"), expiresIn: 86400, date: date)
        #expect(
            url.absoluteString
                == "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
                + "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
                + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
        #expect(throws: BlobStreamError.self) {
            try configuration.presignedURL(for: S3Location(bucket: "b", key: "k"), expiresIn: 604_801)
        }
    }

    /// `curl -s -o FILE -w '%{http_code}' URL`: the status and the body.
    static func curl(_ url: String, folder: URL) async throws -> (status: Int, body: Data) {
        let out = folder.appendingPathComponent("curl-\(UUID().uuidString)")
        let status = try await offThePool { () throws -> String in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = ["-s", "-g", "-o", out.path, "-w", "%{http_code}", url]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let text = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: text, as: UTF8.self)
        }
        return (Int(status) ?? 0, (try? Data(contentsOf: out)) ?? Data())
    }

    @Test("blobstream presign: curl gets the object; expired, changed or another key's: refused")
    func fetchedByCurl() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(300_001, seed: 31)
        _ = try await fixture.client.putObject(fixture.location("shared/a b.bin"), body: ByteBuffer(bytes: data))
        let presigned = try await S3ReadToolTests.run(
            ["presign", "s3://\(fixture.bucket)/shared/a b.bin", "--expires-in", "600"],
            environment: S3ReadToolTests.environment(fixture))
        #expect(presigned.status == 0, "\(presigned.stderr)")
        let url = String(decoding: presigned.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(url.contains("X-Amz-Expires=600"))
        let fetched = try await Self.curl(url, folder: fixture.folder)
        #expect(fetched.status == 200)
        #expect(sha256Hex(fetched.body) == sha256Hex(data))

        // A changed signature, another key under the same signature: refused.
        let lastDigit = url.last == "0" ? "1" : "0"
        let tampered = try await Self.curl(String(url.dropLast()) + lastDigit, folder: fixture.folder)
        #expect(tampered.status == 403)
        let otherKey = try await Self.curl(
            url.replacingOccurrences(of: "/shared/a%20b.bin?", with: "/shared/other.bin?"), folder: fixture.folder)
        #expect(otherKey.status == 403)

        // Signed two hours ago for one minute: expired.
        let expired = try fixture.client.presignedURL(
            for: fixture.location("shared/a b.bin"), expiresIn: 60, date: Date().addingTimeInterval(-7200))
        let late = try await Self.curl(expired.absoluteString, folder: fixture.folder)
        #expect(late.status == 403)
        #expect(String(decoding: late.body, as: UTF8.self).contains("AccessDenied"))
    }

    @Test("presign: --expires-in beyond 7 days is a usage error")
    func tooLong() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let result = try await S3ReadToolTests.run(
            ["presign", "s3://\(fixture.bucket)/k", "--expires-in", "604801"],
            environment: S3ReadToolTests.environment(fixture))
        #expect(result.status == 2)
        #expect(result.stderr.contains("--expires-in"))
    }
}
