import BlobStream
import BlobStreamHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import BlobStreamS3

@Suite("S3's XML answers")
struct S3XMLTests {
    @Test("an error document becomes a BlobStreamError naming the key, S3's code, the status and the request id")
    func errorDocument() {
        let body = ByteBuffer(
            string: """
                <?xml version="1.0" encoding="UTF-8"?>
                <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message><RequestId>tx123</RequestId></Error>
                """)
        let error = S3Client.error("PutObject", "PutObject s3://b/k", status: 403, headers: [:], body: body)
        #expect(error.code == .permissionDenied)
        #expect(error.s3ErrorCode == "SignatureDoesNotMatch")
        #expect(error.s3Details?.requestID == "tx123")
        #expect(error.s3Details?.statusCode == 403)
        #expect(error.description.hasPrefix("PutObject s3://b/k: SignatureDoesNotMatch: The request signature"))
        #expect(error.description.hasSuffix("(HTTP 403, request id tx123)"), "\(error)")
        #expect(!error.isRetryableS3)
    }

    @Test(
        "S3's answers map to the codes that mean the same",
        arguments: [
            ("PutObject", 403, "AccessDenied", BlobStreamError.Code.permissionDenied),
            ("HeadObject", 404, "NoSuchKey", .notFound), ("UploadPart 2", 404, "NoSuchUpload", .notFound),
            ("UploadPart 2", 400, "BadDigest", .corrupt), ("PutObject", 400, "XAmzContentSHA256Mismatch", .corrupt),
            ("PutObject", 400, "InvalidStorageClass", .uploadFailed),
            ("PutObject", 501, "NotImplemented", .uploadFailed),
            ("ListParts", 503, "SlowDown", .httpFailed), ("PutObject", 400, "RequestTimeout", .timedOut),
        ])
    func codes(operation: String, status: Int, s3Code: String, expected: BlobStreamError.Code) {
        let body = ByteBuffer(string: "<Error><Code>\(s3Code)</Code><Message>m</Message></Error>")
        let error = S3Client.error(operation, "\(operation) s3://b/k", status: status, headers: [:], body: body)
        #expect(error.code == expected, "\(error)")
        #expect(error.s3ErrorCode == s3Code)
        #expect(error.description.contains("s3://b/k") && error.description.contains("HTTP \(status)"), "\(error)")
    }

    @Test(
        "which errors are retried",
        arguments: [
            (BlobStreamError.s3(.ioFailed, "", kind: .connection), true),
            (BlobStreamError.s3(.corrupt, "", kind: .answer, s3Code: "BadDigest", statusCode: 400), true),
            (BlobStreamError.s3(.uploadFailed, "", kind: .answer, s3Code: "InternalError", statusCode: 500), true),
            (BlobStreamError.s3(.invalidResponse, "", kind: .answer, statusCode: 503), true),
            (BlobStreamError.s3(.timedOut, "", kind: .timeout), true),
            (BlobStreamError.s3(.ioFailed, "", kind: .tls), false),
            (
                BlobStreamError.s3(.permissionDenied, "", kind: .answer, s3Code: "InvalidAccessKeyId", statusCode: 403),
                false
            ),
            (BlobStreamError.s3(.notFound, "", kind: .answer, s3Code: "NoSuchUpload", statusCode: 404), false),
            (BlobStreamError.s3(.uploadFailed, "", kind: .answer, s3Code: "NotImplemented", statusCode: 501), false),
            (BlobStreamError.s3(.changed, ""), false),
        ])
    func retryable(error: BlobStreamError, expected: Bool) {
        #expect(error.isRetryableS3 == expected)
    }

    @Test("a ListParts page: namespaces, entities, quoted ETags")
    func listParts() throws {
        let xml = """
            <?xml version='1.0' encoding='UTF-8'?>
            <ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><Key>a &amp; b&#x2F;c</Key>
            <UploadId>abc</UploadId><IsTruncated>true</IsTruncated><NextPartNumberMarker>2</NextPartNumberMarker>
            <Part><PartNumber>1</PartNumber><ETag>&quot;5d41402abc4b2a76b9719d911017c592&quot;</ETag><Size>5242880</Size></Part>
            <Part><PartNumber>2</PartNumber><ETag>"7d793037a0760186574b0282f2f435e7"</ETag><Size>12</Size></Part>
            <!-- a comment --><Empty/></ListPartsResult>
            """
        let root = try S3XMLElement.parse(Data(xml.utf8))
        #expect(root.name == "ListPartsResult")
        #expect(root["Key"] == "a & b/c")
        #expect(root["IsTruncated"] == "true")
        let parts = root.children("Part")
        #expect(parts.count == 2)
        #expect(parts[0]["ETag"].map(S3Client.unquoted) == "5d41402abc4b2a76b9719d911017c592")
        #expect(parts[1]["Size"] == "12")
        #expect(root.child("Empty") != nil)
    }

    @Test(
        "malformed XML is an error, never a partial document",
        arguments: [
            "", "<a>", "<a></b>", "<a>x</a><b/>", "<a>&bogus;</a>", "text", "<a><b></a>",
        ])
    func malformed(_ xml: String) {
        #expect(throws: S3XMLParseError.self) { try S3XMLElement.parse(Data(xml.utf8)) }
    }

    @Test("Content-MD5 and part ETags")
    func digests() {
        let body = ByteBuffer(string: "hello")
        #expect(S3Client.contentMD5(body) == "XUFAKrxLKna5cZ2REBfFkg==")
        #expect(S3Client.md5Hex(body) == "5d41402abc4b2a76b9719d911017c592")
    }
}
