import BlobStreamS3
import Foundation
import Testing

/// One case of AWS's SigV4 test suite (see `Vectors/README.md`), read from its files.
struct SigV4Vector: CustomStringConvertible, Sendable {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Vectors/aws-sig-v4-test-suite")

    static let names: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return names.sorted()
    }()

    let name: String
    var description: String { name }

    func file(_ name: String) throws -> String {
        try String(
            contentsOf: Self.root.appendingPathComponent(self.name).appendingPathComponent(name), encoding: .utf8)
    }

    struct Context: Decodable {
        struct Credentials: Decodable {
            var accessKeyID: String
            var secretAccessKey: String
            var token: String?
            enum CodingKeys: String, CodingKey {
                case accessKeyID = "access_key_id"
                case secretAccessKey = "secret_access_key"
                case token
            }
        }
        var credentials: Credentials
        var normalize: Bool
        var region: String
        var service: String
        var signBody: Bool
        var timestamp: String
        var omitSessionToken: Bool?
        enum CodingKeys: String, CodingKey {
            case credentials, normalize, region, service, timestamp
            case signBody = "sign_body"
            case omitSessionToken = "omit_session_token"
        }
    }

    func context() throws -> Context {
        try JSONDecoder().decode(Context.self, from: Data(try file("context.json").utf8))
    }

    /// The request of `request.txt`: request line, header lines (a line that starts with
    /// white space continues the previous value), a blank line, the body.
    func request() throws -> (request: SigV4Request, body: Data) {
        let text = try file("request.txt")
        let (head, body): (Substring, Substring) =
            if let blank = text.range(of: "\n\n") { (text[..<blank.lowerBound], text[blank.upperBound...]) } else {
                (Substring(text), "")
            }
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false)
        let requestLine = lines.removeFirst()
        let method = String(requestLine.prefix { $0 != " " })
        let target = requestLine.dropFirst(method.count + 1).dropLast(" HTTP/1.1".count)
        let path: Substring
        var query: [(name: String, value: String)] = []
        if let mark = target.firstIndex(of: "?") {
            path = target[..<mark]
            for pair in target[target.index(after: mark)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let decode = { (s: Substring) in s.removingPercentEncoding ?? String(s) }
                query.append((name: decode(parts[0]), value: parts.count > 1 ? decode(parts[1]) : ""))
            }
        } else {
            path = target
        }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            if line.first == " " || line.first == "\t" {
                headers[headers.count - 1].value += "\n" + line
            } else {
                let colon = line.firstIndex(of: ":")!
                headers.append((name: String(line[..<colon]), value: String(line[line.index(after: colon)...])))
            }
        }
        return (SigV4Request(method: method, path: String(path), query: query, headers: headers), Data(body.utf8))
    }
}

@Suite("SigV4 against AWS's published test suite")
struct SigV4VectorTests {
    @Test("the suite's cases are all here")
    func casesPresent() {
        #expect(SigV4Vector.names.count == 38)
        #expect(SigV4Vector.names.contains("get-vanilla"))
    }

    @Test("canonical request, string to sign, signature and Authorization match", arguments: SigV4Vector.names)
    func vector(_ name: String) throws {
        let vector = SigV4Vector(name: name)
        let context = try vector.context()
        let (request, body) = try vector.request()
        let date = try #require(ISO8601DateFormatter().date(from: context.timestamp))
        let token = context.omitSessionToken == true ? nil : context.credentials.token
        let signer = SigV4Signer(
            credentials: S3Credentials(
                accessKeyID: context.credentials.accessKeyID,
                secretAccessKey: context.credentials.secretAccessKey, sessionToken: token),
            region: context.region, service: context.service, normalizesPath: context.normalize,
            addsContentSHA256Header: context.signBody)
        let payloadHash = SigV4Signer.sha256Hex(body)
        let prepared = signer.prepare(request, payloadHash: payloadHash, date: date)
        let canonical = signer.canonicalRequest(prepared, payloadHash: payloadHash)
        #expect(canonical == (try vector.file("header-canonical-request.txt")))
        let stringToSign = signer.stringToSign(canonicalRequest: canonical, date: date)
        #expect(stringToSign == (try vector.file("header-string-to-sign.txt")))
        #expect(signer.signature(stringToSign: stringToSign, date: date) == (try vector.file("header-signature.txt")))
        let signed = signer.sign(request, payloadHash: payloadHash, date: date)
        let expected = try vector.file("header-signed-request.txt").split(separator: "\n")
            .first { $0.hasPrefix("Authorization:") }?.dropFirst("Authorization:".count)
        #expect(signed.header("Authorization") == expected.map(String.init))
    }

    /// S3's own example in "Signature Calculations for the Authorization Header: Transferring
    /// Payload in a Single Chunk" (Amazon S3 API Reference, sigv4-header-based-auth): GET
    /// the first 10 bytes of `test.txt` in `examplebucket`, 2013-05-24, us-east-1.
    @Test("S3's documented GetObject with Range example")
    func s3GetObjectRange() throws {
        let signer = SigV4Signer(
            credentials: S3Credentials(
                accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1")
        let date = Date(timeIntervalSince1970: 1_369_353_600) // 2013-05-24T00:00:00Z
        let request = SigV4Request(
            method: "GET", path: "/test.txt",
            headers: [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9")])
        let prepared = signer.prepare(request, payloadHash: SigV4Signer.emptyPayloadHash, date: date)
        let canonical = signer.canonicalRequest(prepared, payloadHash: SigV4Signer.emptyPayloadHash)
        #expect(
            canonical == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        let stringToSign = signer.stringToSign(canonicalRequest: canonical, date: date)
        #expect(stringToSign.hasSuffix("\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"))
        let signed = signer.sign(request, payloadHash: SigV4Signer.emptyPayloadHash, date: date)
        #expect(
            signed.header("Authorization")
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
    }

    @Test(
        "S3 paths are not normalized and keys are encoded once",
        arguments: [
            ("/bucket/a//b/./c", "/bucket/a//b/./c"),
            ("/bucket/photos/IMG 1+2.jpg", "/bucket/photos/IMG%201%2B2.jpg"),
            ("/bucket/été/ü", "/bucket/%C3%A9t%C3%A9/%C3%BC"),
            ("/bucket/100%", "/bucket/100%25"),
        ])
    func s3PathEncoding(path: String, encoded: String) {
        let request = SigV4Request(method: "GET", path: path, headers: [("Host", "h")])
        #expect(request.encodedPath == encoded)
        let signer = SigV4Signer(
            credentials: S3Credentials(accessKeyID: "a", secretAccessKey: "b"), region: "us-east-1")
        let canonical = signer.canonicalRequest(request, payloadHash: SigV4Signer.emptyPayloadHash)
        #expect(canonical.split(separator: "\n", omittingEmptySubsequences: false)[1] == encoded)
    }
}
