import BlobStream
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import HTTPTestPeers
import Testing

/// Credentials stay with their origin: a `prepare` hook's headers go only to the source's
/// own scheme, host and port, whatever a redirect says; passwords in URLs never reach a
/// message. Two peers on 127.0.0.1 on two ports are two origins; the second logs what it got.
@Suite("Remote reads: credentials kept to their origin", .serialized)
struct CredentialOriginTests {
    let first: MisbehavingHTTPPeer
    let second: MisbehavingHTTPPeer
    let bytes = sampleBytes(600_000, seed: 83)

    init() throws {
        first = try MisbehavingHTTPPeer()
        second = try MisbehavingHTTPPeer()
        first.serve(bytes, at: "/object.bin")
        second.serve(bytes, at: "/object.bin")
    }

    /// Small blocks (several GETs after the redirect), a hook that adds credentials.
    static func options(withCredentials: Bool = true) -> HTTPRangeOptions {
        var options = HTTPRangeOptions(blockSize: 128 << 10, readAhead: 2, connection: HTTPConnectionOptions())
        if withCredentials {
            options.prepare = { request in
                request.headers.add(name: "Authorization", value: "Bearer secret-token")
                request.headers.add(name: "X-Amz-Security-Token", value: "session-token")
            }
        }
        return options
    }

    func read(_ url: String, _ options: HTTPRangeOptions) -> (data: Data, last: Int, error: BlobStreamError?) {
        let source = HTTPRangeDataSource(url: URL(string: url)!, options: options)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        defer { stream.close() }
        let (data, last) = stream.readToEnd(chunkSize: 50_000)
        return (data, last, source.error as? BlobStreamError)
    }

    @Test("a redirect to another origin is refused when the request carries credentials: nothing reaches it")
    func refusedElsewhere() {
        defer { (first.stop(), second.stop()) }
        let read = read(first.url("/elsewhere/\(second.port)/object.bin"), Self.options())
        #expect(read.last == -1 && read.data.isEmpty)
        #expect(read.error?.code == .httpFailed)
        let message = read.error?.message ?? ""
        #expect(message.contains("127.0.0.1:\(second.port)/object.bin"), "names the location: \(message)")
        #expect(message.contains("another origin"), "\(message)")
        #expect(second.requests.isEmpty, "the other origin got \(second.requests)")
        #expect(first.requests.first?.authorization == "Bearer secret-token", "the source's own origin gets them")
    }

    @Test("a redirect to a presigned URL elsewhere is followed without the credentials; every range arrives whole")
    func presignedElsewhere() {
        defer { (first.stop(), second.stop()) }
        let read = read(first.url("/elsewhere-presigned/\(second.port)/object.bin"), Self.options())
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        let gets = second.requests.filter { $0.method == "GET" }
        #expect(gets.count >= 4, "the ranges after the redirect go to the new location: \(second.requests)")
        #expect(gets.allSatisfy { $0.authorization == nil && $0.securityToken == nil }, "\(gets)")
    }

    @Test("a redirect within the origin keeps the credentials on every range")
    func sameOrigin() {
        defer { (first.stop(), second.stop()) }
        let read = read(first.url("/hop/2/object.bin"), Self.options())
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(first.requests.allSatisfy { $0.authorization == "Bearer secret-token" }, "\(first.requests)")
    }

    @Test("without credentials a redirect elsewhere is followed as curl -L follows it")
    func plainElsewhere() {
        defer { (first.stop(), second.stop()) }
        let read = read(first.url("/elsewhere/\(second.port)/object.bin"), Self.options(withCredentials: false))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256(read.data) == sha256(bytes))
        #expect(second.requests.contains { $0.action == "served" })
    }

    @Test("a URL's password never reaches an error message; the user name does, as curl shows it")
    func passwordNotPrinted() {
        defer { (first.stop(), second.stop()) }
        let url = "http://reader:hunter2@127.0.0.1:\(first.port)/missing.bin"
        let read = read(url, Self.options(withCredentials: false))
        let message = read.error?.message ?? ""
        #expect(read.error != nil)
        #expect(!message.contains("hunter2"), "\(message)")
        #expect(message.contains("http://reader@127.0.0.1:\(first.port)/missing.bin"), "\(message)")
    }

    @Test("an upload with credentials redirected (307) to another origin is refused: the body never goes there")
    func uploadRefusedElsewhere() async throws {
        defer { (first.stop(), second.stop()) }
        let body = UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }
        let task = HTTPClientUploader().upload(
            body, to: first.url("/elsewhere/\(second.port)/up.bin"),
            headers: [(name: "Authorization", value: "Bearer secret-token")])
        let error = await #expect(throws: BlobStreamError.self) { try await task.result }
        #expect(error?.code == .uploadFailed)
        #expect(error?.message.contains("127.0.0.1:\(second.port)/up.bin") == true, "\(String(describing: error))")
        #expect(error?.message.contains("another origin") == true, "\(String(describing: error))")
        #expect(second.requests.isEmpty, "the other origin got \(second.requests)")
    }

    @Test("an upload redirected to a presigned URL elsewhere goes there whole, without the credentials")
    func uploadPresignedElsewhere() async throws {
        defer { (first.stop(), second.stop()) }
        let body = UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }
        let result = try await HTTPClientUploader().upload(
            body, to: first.url("/elsewhere-presigned/\(second.port)/up.bin"),
            headers: [(name: "Authorization", value: "Bearer secret-token")]
        ).result
        #expect(result.statusCode == 201)
        let stored = second.requests.filter { $0.action == "stored" }
        #expect(stored.count == 1 && stored.allSatisfy { $0.authorization == nil }, "\(second.requests)")
        #expect(second.requests.first.map { $0.path.hasPrefix("/up.bin?") } == true)
        let copy = second.requests.first.flatMap { second.bytes(at: $0.path) }
        #expect(copy.map(sha256) == sha256(bytes))
    }

    @Test(
        "BlobURL.redactingPasswords leaves every password out, and nothing else",
        arguments: [
            ("http://u:p@h/x", "http://u@h/x"),
            ("https://user:pa:ss@host:8443/a?b=c@d", "https://user@host:8443/a?b=c@d"),
            ("archive:https://u:secret@h/a.tar!/m@n", "archive:https://u@h/a.tar!/m@n"),
            (
                "GET http://a:b@h1/x failed: redirects to http://c:d@h2/y",
                "GET http://a@h1/x failed: redirects to http://c@h2/y"
            ),
            ("http://user@h/x", "http://user@h/x"),
            ("http://h/p:q@r", "http://h/p:q@r"),
            ("s3://bucket/key", "s3://bucket/key"),
            ("mail me at a@b.c", "mail me at a@b.c"),
        ])
    func redaction(input: String, expected: String) {
        #expect(BlobURL.redactingPasswords(input) == expected)
    }

    @Test(
        "same origin: scheme, host and port, default ports filled in",
        arguments: [
            ("http://h/a", "http://H:80/b", true),
            ("https://h/a", "https://h:443/b", true),
            ("http://h/a", "https://h/a", false),
            ("http://h:8080/a", "http://h:8081/a", false),
            ("http://h/a", "http://h.evil/a", false),
        ])
    func origins(a: String, b: String, same: Bool) {
        #expect(BlobURL.isSameOrigin(URL(string: a)!, URL(string: b)!) == same)
    }

    @Test(
        "presigned: a URL that carries its own authorization",
        arguments: [
            ("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab", true),
            ("https://h/k?AWSAccessKeyId=A&Expires=1&Signature=s", true),
            ("https://h/k?Signature=s", false),
            ("https://h/k", false),
            ("https://h/x-amz-signature", false),
        ])
    func presigned(url: String, presigned: Bool) {
        #expect(BlobURL.isPresigned(URL(string: url)!) == presigned)
    }
}
