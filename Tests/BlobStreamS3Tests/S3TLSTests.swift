import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore
import NginxTestServer
import SwiftStoreTestServer
import Testing

/// The store behind HTTPS: nginx with a certificate from a CA made for the test, passing
/// requests on to the store unchanged (requests are signed for the host the client talks to,
/// `127.0.0.1:TLSPORT`, which is the `Host` the store sees and checks).
struct TLSStoreFixture {
    let fixture: StoreFixture
    let tls: TLSReverseProxy

    init() async throws {
        fixture = try await StoreFixture()
        let port = try #require(URL(string: fixture.store.endpoint)?.port)
        tls = try TLSReverseProxy(upstreamPort: port)
    }

    /// The store's configuration, with the HTTPS endpoint.
    var configuration: S3Configuration {
        var configuration = fixture.client.configuration
        configuration.endpoint = URL(string: tls.endpoint)!
        return configuration
    }

    var caBundle: String { tls.certificates.caCertificate.path }

    func stop() {
        tls.stop()
        fixture.cleanUp()
    }
}

@Suite("S3 over HTTPS: a CA bundle, an untrusted certificate, a CONNECT proxy", .serialized)
struct S3TLSTests {
    @Test("upload (multipart and one PUT) and s3:// read over HTTPS with the CA bundle: the bytes stored")
    func trusted() async throws {
        let setup = try await TLSStoreFixture()
        defer { setup.stop() }
        let fixture = setup.fixture
        let connection = HTTPConnectionOptions(caBundle: setup.caBundle)
        let client = try S3Client(configuration: setup.configuration, connection: connection)
        let (path, data) = try fixture.file("big", count: 11 << 20 | 5, seed: 31)
        let (smallPath, small) = try fixture.file("small", count: 1000, seed: 32)
        let outcome = await Result.of {
            let big = try await S3Uploader(client: client).upload(
                fixture.fileSource(path), to: fixture.location("tls/big"), options: S3UploadOptions(partSize: 5 << 20)
            ).result
            let one = try await S3Uploader(client: client).upload(
                fixture.fileSource(smallPath), to: fixture.location("tls/small")
            ).result
            return (big, one)
        }
        let (big, one) = try outcome.get()
        #expect(big.parts == 3)
        #expect(one.parts == 0)
        #expect(sha256Hex(try await fixture.stored("tls/big")) == sha256Hex(data))
        #expect(try await fixture.stored("tls/small") == small)
        #expect(setup.tls.accessLog().contains { $0.hasPrefix("PUT /\(fixture.bucket)/tls/big?partNumber=3") })

        let read = try await readAll { [configuration = setup.configuration] in
            S3Sources.makeSource(
                S3Location(bucket: fixture.bucket, key: "tls/big"), configuration: configuration,
                options: HTTPRangeOptions(connection: connection))
        }
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(sha256Hex(read.data) == sha256Hex(data))
    }

    @Test("without the CA bundle: a TLS error naming the endpoint at once, no retries, nothing reaches the store")
    func untrusted() async throws {
        let setup = try await TLSStoreFixture()
        defer { setup.stop() }
        let fixture = setup.fixture
        let client = try S3Client(configuration: setup.configuration, connection: HTTPConnectionOptions())
        let (path, _) = try fixture.file("big", count: 6 << 20, seed: 33)
        let started = ContinuousClock.now
        let outcome = await Result.of {
            try await S3Uploader(client: client).upload(
                fixture.fileSource(path), to: fixture.location("tls/refused"),
                options: S3UploadOptions(partSize: 5 << 20, retry: StoreFixture.slowRetry)
            ).result
        }
        // A retry would wait 60 s first: the bound tells "no retry" from one on a loaded machine
        // (7 s seen under ThreadSanitizer with a build beside the suite).
        #expect(ContinuousClock.now - started < .seconds(30), "\(ContinuousClock.now - started)")
        let error = try #require(outcome.failure as? BlobStreamError, "\(outcome)")
        #expect(error.code == .ioFailed, "\(error)")
        #expect(error.description.contains(setup.tls.endpoint), "\(error)")
        #expect(error.description.contains("HTTPConnectionOptions.caBundle or AWS_CA_BUNDLE"), "\(error)")
        #expect(setup.tls.accessLog().isEmpty)

        let read = try await readAll { [configuration = setup.configuration] in
            S3Sources.makeSource(
                S3Location(bucket: fixture.bucket, key: "tls/refused"), configuration: configuration,
                options: HTTPRangeOptions(connection: HTTPConnectionOptions()))
        }
        #expect(read.error?.code == .ioFailed, "\(String(describing: read.error))")
        #expect(read.error?.message.contains("TLS connection for s3://\(fixture.bucket)/tls/refused") == true)
    }

    @Test("HTTPS_PROXY: the upload goes through the proxy's CONNECT tunnel; NO_PROXY bypasses it")
    func connectProxy() async throws {
        let setup = try await TLSStoreFixture()
        defer { setup.stop() }
        let fixture = setup.fixture
        let proxy = try SocketPeer.connectProxy()
        defer { proxy.stop() }
        let environment = ["HTTPS_PROXY": "http://127.0.0.1:\(proxy.port)", "AWS_CA_BUNDLE": setup.caBundle]
        let (path, data) = try fixture.file("big", count: 11 << 20, seed: 34)
        let cases: [(key: String, extra: [String: String])] = [
            ("tls/proxied", [:]), ("tls/direct", ["NO_PROXY": "127.0.0.1"]),
        ]
        for (key, extra) in cases {
            let before = proxy.recorded("connects").count
            let connection = HTTPConnectionOptions.fromEnvironment(
                environment: environment.merging(extra) { $1 })
            let client = try S3Client(configuration: setup.configuration, connection: connection)
            let outcome = await Result.of {
                try await S3Uploader(client: client).upload(
                    fixture.fileSource(path), to: fixture.location(key), options: S3UploadOptions(partSize: 5 << 20)
                ).result
            }
            #expect(try outcome.get().parts == 3)
            #expect(sha256Hex(try await fixture.stored(key)) == sha256Hex(data))
            let connects = proxy.recorded("connects").dropFirst(before)
            if extra.isEmpty {
                #expect(connects.contains { $0.hasPrefix("CONNECT 127.0.0.1:\(setup.tls.port) ") }, "\(connects)")
            } else {
                #expect(connects.isEmpty, "\(connects)")
            }
        }
    }

    @Test("the tool: --ca-bundle and AWS_CA_BUNDLE for upload and cat; without: exit 1, one TLS line")
    func tool() async throws {
        let setup = try await TLSStoreFixture()
        defer { setup.stop() }
        let fixture = setup.fixture
        let (path, data) = try fixture.file("big", count: 6 << 20 | 3, seed: 35)
        var environment = S3Tool.environment(fixture.store, home: fixture.folder)
        for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"] {
            environment[name] = nil
        }
        let to = "s3://\(fixture.bucket)/tool/big"
        let base = ["upload", path, "--to", to, "--endpoint-url", setup.tls.endpoint, "--part-size", "5MiB"]

        let flag = try await S3Tool.run(base + ["--ca-bundle", setup.caBundle], environment: environment)
        #expect(flag.status == 0, "\(flag.stderr)")
        #expect(flag.stderr.contains("in 2 parts"), "\(flag.stderr)")
        #expect(sha256Hex(try await fixture.stored("tool/big")) == sha256Hex(data))

        var withBundle = environment
        withBundle["AWS_CA_BUNDLE"] = setup.caBundle
        let variable = try await S3Tool.run(base, environment: withBundle)
        #expect(variable.status == 0, "\(variable.stderr)")

        let cat = try await S3ReadToolTests.run(
            ["cat", to, "--endpoint-url", setup.tls.endpoint], environment: withBundle)
        #expect(cat.status == 0, "\(cat.stderr)")
        #expect(sha256Hex(cat.stdout) == sha256Hex(data))

        var bare = environment
        bare["SSL_CERT_FILE"] = nil
        bare["AWS_CA_BUNDLE"] = nil
        let refused = try await S3Tool.run(base, environment: bare)
        #expect(refused.status == 1)
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("TLS") && refused.stderr.contains(setup.tls.endpoint), "\(refused.stderr)")
    }
}

extension Result where Failure == any Error {
    /// The result of `body`, or the error it threw.
    static func of(_ body: () async throws -> Success) async -> Self {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }

    /// The error, if any.
    var failure: (any Error)? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
