import BlobStream
import Foundation
import Testing

@testable import BlobStreamS3

@Suite("Credentials, region and endpoint as awscli finds them")
struct S3ConfigurationTests {
    /// A folder with `credentials` and `config` files, removed by the caller.
    func profileFiles(credentials: String, config: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("s3-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try credentials.write(to: folder.appendingPathComponent("credentials"), atomically: true, encoding: .utf8)
        try config.write(to: folder.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        return folder
    }

    @Test("environment keys win over the profile files")
    func environmentFirst() throws {
        let folder = try profileFiles(
            credentials: "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n",
            config: "[default]\nregion = eu-west-1\n")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = try S3Configuration.resolve(environment: [
            "HOME": folder.path, "AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret",
            "AWS_SESSION_TOKEN": "token", "AWS_SHARED_CREDENTIALS_FILE": folder.path + "/credentials",
            "AWS_CONFIG_FILE": folder.path + "/config",
        ])
        #expect(
            configuration.credentials
                == S3Credentials(accessKeyID: "ENVKEY", secretAccessKey: "envsecret", sessionToken: "token"))
        #expect(configuration.region == "eu-west-1")
        #expect(configuration.endpoint == nil)
        #expect(!configuration.usesPathStyle)
    }

    @Test("a named profile: [NAME] in credentials, [profile NAME] in config, endpoint_url")
    func namedProfile() throws {
        let folder = try profileFiles(
            credentials: """
                # comment
                [default]
                aws_access_key_id = DEFAULTKEY
                aws_secret_access_key = defaultsecret

                [store]
                aws_access_key_id = test:tester
                aws_secret_access_key = testing
                """,
            config: """
                [default]
                region = eu-west-1
                [profile store]
                region = us-east-1
                endpoint_url = http://127.0.0.1:8080
                s3 =
                  addressing_style = path
                """)
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = try S3Configuration.resolve(environment: [
            "AWS_PROFILE": "store", "AWS_SHARED_CREDENTIALS_FILE": folder.path + "/credentials",
            "AWS_CONFIG_FILE": folder.path + "/config",
        ])
        #expect(configuration.credentials == S3Credentials(accessKeyID: "test:tester", secretAccessKey: "testing"))
        #expect(configuration.region == "us-east-1")
        #expect(configuration.endpoint?.absoluteString == "http://127.0.0.1:8080")
        #expect(configuration.usesPathStyle)
    }

    @Test(
        "endpoint: --endpoint-url, then AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL; region: argument, AWS_REGION, AWS_DEFAULT_REGION"
    )
    func precedence() throws {
        var environment = [
            "HOME": "/nonexistent", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:2",
            "AWS_REGION": "r1", "AWS_DEFAULT_REGION": "r2",
        ]
        #expect(
            try S3Configuration.resolve(environment: environment, endpointURL: "http://127.0.0.1:3").endpoint?.port == 3
        )
        #expect(try S3Configuration.resolve(environment: environment).endpoint?.port == 2)
        #expect(try S3Configuration.resolve(environment: environment).region == "r1")
        #expect(try S3Configuration.resolve(environment: environment, region: "r0").region == "r0")
        environment["AWS_ENDPOINT_URL_S3"] = nil
        environment["AWS_REGION"] = nil
        #expect(try S3Configuration.resolve(environment: environment).endpoint?.port == 1)
        #expect(try S3Configuration.resolve(environment: environment).region == "r2")
    }

    @Test("no credentials anywhere: an error that says where it looked")
    func missing() throws {
        let error = #expect(throws: BlobStreamError.self) {
            try S3Configuration.resolve(environment: ["HOME": "/nonexistent", "AWS_PROFILE": "nothere"])
        }
        #expect(error?.code == .missingCredentials)
        #expect(error?.message.contains("/nonexistent/.aws/credentials") == true)
        #expect(error?.message.contains("'nothere'") == true)
    }

    @Test("bad endpoints are refused", arguments: ["ftp://127.0.0.1", "127.0.0.1:8080", "http://", "http://h/?a=b"])
    func badEndpoint(_ text: String) {
        #expect(throws: BlobStreamError.self) { try S3Configuration.endpoint(text) }
    }

    @Test(
        "s3:// URLs",
        arguments: [
            ("s3://bucket/key", "bucket", "key"), ("s3://b/dir/sub/file.tar.gz", "b", "dir/sub/file.tar.gz"),
            ("s3://b/a%20b", "b", "a%20b"),
        ])
    func locations(url: String, bucket: String, key: String) throws {
        let location = try S3Location(url: url)
        #expect(location.bucket == bucket && location.key == key)
        #expect(location.description == url)
    }

    @Test("malformed s3:// URLs", arguments: ["s3://bucket", "s3://bucket/", "s3:///key", "http://b/k", "s3:/b/k"])
    func badLocations(_ url: String) {
        #expect(throws: BlobStreamError.self) { try S3Location(url: url) }
    }

    @Test("part sizes: at least 5 MiB, raised to whole MiB for at most 10,000 parts")
    func partSizes() {
        let options = S3UploadOptions()
        #expect(options.effectivePartSize(length: 27 << 20) == 8 << 20)
        #expect(S3UploadOptions(partSize: 1 << 20).effectivePartSize(length: nil) == 5 << 20)
        let huge: Int64 = 200 << 30 // 200 GiB / 10,000 = 20.48 MiB → 21 MiB
        let size = options.effectivePartSize(length: huge)
        #expect(size == 21 << 20)
        #expect((huge + Int64(size) - 1) / Int64(size) <= 10_000)
    }

    @Test("paths: path-style and virtual-hosted, ports and keys")
    func targets() {
        let credentials = S3Credentials(accessKeyID: "a", secretAccessKey: "b")
        let local = S3Client(
            configuration: S3Configuration(
                credentials: credentials, region: "us-east-1", endpoint: URL(string: "http://127.0.0.1:8080")))
        let t = local.target(bucket: "b", key: "dir/a b")
        #expect(t.base == "http://127.0.0.1:8080" && t.path == "/b/dir/a b" && t.host == "127.0.0.1:8080")
        let aws = S3Client(configuration: S3Configuration(credentials: credentials, region: "eu-west-1"))
        let v = aws.target(bucket: "b", key: "k")
        #expect(
            v.base == "https://b.s3.eu-west-1.amazonaws.com" && v.path == "/k"
                && v.host == "b.s3.eu-west-1.amazonaws.com")
    }
}
