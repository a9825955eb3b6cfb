import BlobStream
import BlobStreamS3
import Foundation
import SwiftStoreTestServer
import Testing

/// The checksum a store's answer gives for the object is compared with the one computed here:
/// another one means the store holds other bytes than those sent (or misreports them), and
/// the upload fails naming both and the object. The store (OpenStack Swift 2.30) keeps no S3
/// checksums, so the fault proxy in front of it says what a store that keeps them would.
@Suite("S3 uploads: the store's checksum answer is compared", .serialized)
struct S3ChecksumAnswerTests {
    @Test("one PutObject whose answer echoes another CRC-64/NVME: exit 1 naming both; the same one: kept, exit 0")
    func singlePut() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let path = fixture.folder.appendingPathComponent("check.txt").path
        try Data("123456789".utf8).write(to: URL(fileURLWithPath: path))
        let arguments = [
            "upload", path, "--to", "s3://\(fixture.bucket)/check.txt", "--endpoint-url", proxy.endpoint,
            "--checksum-algorithm", "CRC64NVME",
        ]
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)

        try await proxy.setRules([.rewrite(headers: ["x-amz-checksum-crc64nvme": "AAAAAAAAAAA="], method: "PUT")])
        let lying = try await S3Tool.run(arguments, environment: environment)
        #expect(lying.status == 1, "\(lying.stderr)")
        #expect(lying.stderr.split(separator: "\n").count == 1, "\(lying.stderr)")
        #expect(lying.stderr.contains("s3://\(fixture.bucket)/check.txt"), "\(lying.stderr)")
        #expect(lying.stderr.contains("CRC64NVME is AAAAAAAAAAA="), "\(lying.stderr)")
        #expect(lying.stderr.contains("have rosUhgp5mIg="), "\(lying.stderr)")
        #expect(try await proxy.log().filter { $0.method == "PUT" }.map(\.action) == ["rewrite"])

        // The value computed here, echoed: the store keeps it, and the final line says so.
        try await proxy.setRules([.rewrite(headers: ["x-amz-checksum-crc64nvme": "rosUhgp5mIg="], method: "PUT")])
        let honest = try await S3Tool.run(arguments, environment: environment)
        #expect(honest.status == 0, "\(honest.stderr)")
        // In base64 as S3 shows it, and in hex as `blobstream checksum -a crc64nvme` prints it.
        #expect(honest.stderr.contains(", CRC64NVME rosUhgp5mIg= (hex ae8b14860a799888)\n"), "\(honest.stderr)")
        let sum = try await S3ReadToolTests.run(["checksum", "-a", "crc64nvme", path], environment: environment)
        let printed = String(decoding: sum.stdout, as: UTF8.self)
        #expect(sum.status == 0 && printed.hasPrefix("ae8b14860a799888 "), "\(printed) \(sum.stderr)")
    }

    @Test("CompleteMultipartUpload answering another composite CRC-32C: exit 1 naming both values and the object")
    func multipart() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("parts.bin", count: 11 << 20, seed: 61)
        // What a store that keeps CRC-32C says: on create that it keeps it; on complete the
        // object's composite checksum, here another one (the store's s3api would refuse the
        // part checksums in the completion, so the proxy answers it).
        let wrong = "AAAAAA==-3"
        let completion =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><CompleteMultipartUploadResult><Bucket>\(fixture.bucket)</Bucket>"
            + "<Key>parts.bin</Key><ETag>\"0123456789abcdef0123456789abcdef-3\"</ETag>"
            + "<ChecksumCRC32C>\(wrong)</ChecksumCRC32C></CompleteMultipartUploadResult>"
        try await proxy.setRules([
            .rewrite(headers: ["x-amz-checksum-algorithm": "CRC32C"], method: "POST", path: "\\?uploads"),
            .answer(
                200, headers: ["Content-Type": "application/xml"], body: completion, method: "POST", path: "uploadId="),
        ])
        let result = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/parts.bin", "--endpoint-url", proxy.endpoint,
                "--part-size", "5MiB", "--checksum-algorithm", "CRC32C",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        let parts = stride(from: 0, to: data.count, by: 5 << 20).map { start in
            var checksum = S3Checksum(.crc32c)
            checksum.update(data[start..<min(start + (5 << 20), data.count)])
            return checksum
        }
        let ours = try #require(S3Checksum.object(parts, type: .composite))
        #expect(result.status == 1, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("started multipart upload") }
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("s3://\(fixture.bucket)/parts.bin"), "\(result.stderr)")
        #expect(result.stderr.contains("CRC32C is \(wrong)"), "\(result.stderr)")
        #expect(result.stderr.contains("have \(ours)"), "\(result.stderr)")
        let log = try await proxy.log()
        #expect(log.filter { $0.target.contains("partNumber=") }.count == 3)
        #expect(log.filter { $0.action == "answer" }.count == 1)
    }

    @Test(
        "every upload prints the object's CRC-64/NVME, combined from its parts: the value `checksum -a crc64nvme` prints"
    )
    func crc64OfEveryUpload() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        let (path, data) = try fixture.file("whole.bin", count: (11 << 20) + 7, seed: 62)
        let sum = try await S3ReadToolTests.run(["checksum", "-a", "crc64nvme", path], environment: environment)
        let hex = String(String(decoding: sum.stdout, as: UTF8.self).prefix(16))
        #expect(sum.status == 0 && hex.count == 16, "\(sum.stderr)")
        var expected = S3Checksum(.crc64nvme)
        expected.update(data)
        #expect(expected.hex == hex)
        // Three parts read at their offsets; three parts from a pipe, in order; one PutObject
        // (a smaller prefix, so its own value).
        let small = Data(data.prefix(1000))
        var smallCRC = S3Checksum(.crc64nvme)
        smallCRC.update(small)
        let smallPath = fixture.folder.appendingPathComponent("small.bin").path
        try small.write(to: URL(fileURLWithPath: smallPath))
        let uploads: [(arguments: [String], stdin: Data?, crc: S3Checksum)] = [
            ([path, "--to", "s3://\(fixture.bucket)/ranged.bin"], nil, expected),
            (["-", "--to", "s3://\(fixture.bucket)/piped.bin"], data, expected),
            ([smallPath, "--to", "s3://\(fixture.bucket)/small.bin"], nil, smallCRC),
        ]
        for upload in uploads {
            let result = try await S3Tool.run(
                ["upload"] + upload.arguments + ["--endpoint-url", store.endpoint, "--part-size", "5MiB"],
                environment: environment, stdin: upload.stdin)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                result.stderr.contains(", CRC64NVME \(upload.crc.base64) (hex \(upload.crc.hex); computed here)\n"),
                "\(upload.arguments): \(result.stderr)")
        }
    }

    @Test(
        "a store that keeps the full-object CRC-64/NVME (asked for unasked): parts carry theirs, the completion the object's"
    )
    func crc64FullObjectSent() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        defer { proxy.stop() }
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("full.bin", count: 11 << 20, seed: 63)
        var whole = S3Checksum(.crc64nvme)
        whole.update(data)
        // The proxy says what a store that keeps it says; it answers the completion with another
        // value (the store's s3api would refuse the part checksums in it), which must fail.
        let completion =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><CompleteMultipartUploadResult><Bucket>\(fixture.bucket)</Bucket>"
            + "<Key>full.bin</Key><ETag>\"0123456789abcdef0123456789abcdef-3\"</ETag>"
            + "<ChecksumCRC64NVME>AAAAAAAAAAA=</ChecksumCRC64NVME><ChecksumType>FULL_OBJECT</ChecksumType>"
            + "</CompleteMultipartUploadResult>"
        try await proxy.setRules([
            .rewrite(headers: ["x-amz-checksum-algorithm": "CRC64NVME"], method: "POST", path: "\\?uploads"),
            .answer(
                200, headers: ["Content-Type": "application/xml"], body: completion, method: "POST", path: "uploadId="),
        ])
        let result = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/full.bin", "--endpoint-url", proxy.endpoint,
                "--part-size", "5MiB",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("CRC64NVME is AAAAAAAAAAA="), "\(result.stderr)")
        #expect(result.stderr.contains("have \(whole.base64)"), "\(result.stderr)")
        let log = await proxy.settledLog()
        let create = try #require(log.first { $0.method == "POST" && $0.target.contains("?uploads") })
        #expect(create.headers["x-amz-checksum-algorithm"] == "CRC64NVME")
        #expect(create.headers["x-amz-checksum-type"] == "FULL_OBJECT")
        let parts = log.filter { $0.target.contains("partNumber=") }
        let expectedParts = stride(from: 0, to: data.count, by: 5 << 20).map { start in
            var part = S3Checksum(.crc64nvme)
            part.update(data[start..<min(start + (5 << 20), data.count)])
            return part.base64
        }
        #expect(Set(parts.compactMap { $0.headers["x-amz-checksum-crc64nvme"] }) == Set(expectedParts))
        let complete = try #require(log.first { $0.method == "POST" && $0.target.contains("uploadId=") })
        #expect(complete.headers["x-amz-checksum-type"] == "FULL_OBJECT")
        #expect(complete.headers["x-amz-checksum-crc64nvme"] == whole.base64)
    }
}
