import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamTestSupport
import Foundation
import HTTPTestPeers
import Testing

/// An endpoint that redirects an `s3://` read elsewhere never gets the request's SigV4
/// signature or session token sent there: the store (a peer on 127.0.0.1) redirects every
/// GET to a second peer on another port, which logs the headers it gets.
@Suite("S3 reads: credentials kept to the endpoint's origin", .serialized)
struct S3CredentialOriginTests {
    let endpoint: MisbehavingHTTPPeer
    let elsewhere: MisbehavingHTTPPeer
    let bytes = TestData.pseudoRandom(300_000, seed: 97)

    init() throws {
        endpoint = try MisbehavingHTTPPeer()
        elsewhere = try MisbehavingHTTPPeer()
        elsewhere.serve(bytes, at: "/object.bin")
        elsewhere.serve(bytes, at: "/object.bin.gz")
        elsewhere.serve(bytes, at: "/photos.tar.gz")
    }

    static let credentials = S3Credentials(
        accessKeyID: "AKIDEXAMPLE", secretAccessKey: "not-to-be-seen", sessionToken: "session-token-value")

    /// The tool's environment: the endpoint, keys and a session token, no profile.
    func environment(home: URL) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in [
            "AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
        ] {
            environment[name] = nil
        }
        environment["HOME"] = home.path
        environment["AWS_ENDPOINT_URL"] = endpoint.url("")
        environment["AWS_ACCESS_KEY_ID"] = Self.credentials.accessKeyID
        environment["AWS_SECRET_ACCESS_KEY"] = Self.credentials.secretAccessKey
        environment["AWS_SESSION_TOKEN"] = Self.credentials.sessionToken
        for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "BLOBSTREAM_INDEX_CACHE"] {
            environment[name] = ""
        }
        return environment
    }

    @Test("the library: a redirect to another origin fails naming it; nothing reaches that origin")
    func library() {
        defer { (endpoint.stop(), elsewhere.stop()) }
        let configuration = S3Configuration(
            credentials: Self.credentials, region: "us-east-1", endpoint: URL(string: endpoint.url(""))!)
        let source = S3Sources.makeSource(
            S3Location(bucket: "elsewhere", key: "\(elsewhere.port)/object.bin"), configuration: configuration,
            options: HTTPRangeOptions(connection: HTTPConnectionOptions()))
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        defer { stream.close() }
        let (data, last) = stream.readToEnd(chunkSize: 65536)
        #expect(last == -1 && data.isEmpty)
        let error = source.error as? BlobStreamError
        #expect(
            error?.message.contains("127.0.0.1:\(elsewhere.port)/object.bin") == true, "\(String(describing: error))")
        #expect(endpoint.requests.first?.authorization?.contains("AKIDEXAMPLE") == true, "signed for the endpoint")
        #expect(elsewhere.requests.isEmpty, "the other origin got \(elsewhere.requests)")
    }

    @Test(
        "the tool: cat, a gzip read that looks for its index, index s3://: exit 1 naming the location, no credentials sent",
        arguments: [
            ["cat", "s3://elsewhere/PORT/object.bin"],
            ["cat", "--offset", "100", "gzip:s3://elsewhere/PORT/object.bin.gz"],
            ["index", "s3://elsewhere/PORT/photos.tar.gz"],
        ])
    func tool(arguments: [String]) async throws {
        defer { (endpoint.stop(), elsewhere.stop()) }
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("s3-origin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let run = try await S3Tool.run(
            arguments.map { $0.replacingOccurrences(of: "PORT", with: String(elsewhere.port)) },
            environment: environment(home: home))
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("127.0.0.1:\(elsewhere.port)/"), "\(run.stderr)")
        #expect(!run.stderr.contains("not-to-be-seen") && !run.stderr.contains("session-token-value"))
        #expect(!endpoint.requests.isEmpty)
        #expect(
            elsewhere.requests.allSatisfy { $0.authorization == nil && $0.securityToken == nil },
            "credentials went to another origin: \(elsewhere.requests)")
    }
}
