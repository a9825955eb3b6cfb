import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import BlobStreamS3

@Suite("S3's XML answers")
struct S3XMLTests {
    @Test("an error document becomes S3Error with code, message, request id, bucket and key")
    func errorDocument() {
        let body = ByteBuffer(
            string: """
                <?xml version="1.0" encoding="UTF-8"?>
                <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message><RequestId>tx123</RequestId></Error>
                """)
        let error = S3Client.error(
            "PutObject s3://b/k", status: 403, headers: [:], body: body, location: S3Location(bucket: "b", key: "k"),
            bucket: "b")
        #expect(error.code == S3Error.Code("SignatureDoesNotMatch"))
        #expect(error.requestID == "tx123")
        #expect(error.statusCode == 403)
        #expect(error.bucket == "b" && error.key == "k")
        #expect(error.description.hasPrefix("PutObject s3://b/k: SignatureDoesNotMatch: The request signature"))
        #expect(!error.isRetryable)
    }

    @Test(
        "which errors are retried",
        arguments: [
            (S3Error(.connectionFailed, ""), true), (S3Error(S3Error.Code("BadDigest"), "", statusCode: 400), true),
            (S3Error(S3Error.Code("InternalError"), "", statusCode: 500), true),
            (S3Error(.invalidResponse, "", statusCode: 503), true),
            (S3Error(S3Error.Code("InvalidAccessKeyId"), "", statusCode: 403), false),
            (S3Error(S3Error.Code("NoSuchUpload"), "", statusCode: 404), false),
            (S3Error(.sourceChanged, ""), false),
        ])
    func retryable(error: S3Error, expected: Bool) {
        #expect(error.isRetryable == expected)
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
