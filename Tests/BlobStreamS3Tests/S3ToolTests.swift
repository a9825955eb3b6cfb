import BlobStreamS3
import Foundation
import NginxTestServer
import SwiftStoreTestServer
import Testing

/// Runs the built `blobstream` with the store's credentials in its environment (and a HOME
/// of its own, so that no profile of the machine's user is read).
enum S3Tool {
    static let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("blobstream").path

    struct Result: Sendable {
        var status: Int32
        var stderr: String
    }

    static func environment(_ store: SwiftStoreTestServer, secret: String? = nil, home: URL) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in [
            "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION",
            "AWS_SESSION_TOKEN", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
        ] {
            environment[name] = nil
        }
        environment["HOME"] = home.path
        environment["AWS_ACCESS_KEY_ID"] = store.accessKey
        environment["AWS_SECRET_ACCESS_KEY"] = secret ?? store.secretKey
        return environment
    }

    /// Starts `blobstream ARGS`; stdin from `stdin` (written on a thread), stderr collected.
    static func start(_ arguments: [String], environment: [String: String], stdin: Data? = nil) throws -> (
        Process, Pipe
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.environment = environment
        let err = Pipe()
        let input = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = input
        try process.run()
        Thread {
            if let stdin { input.fileHandleForWriting.write(stdin) }
            try? input.fileHandleForWriting.close()
        }.start()
        return (process, err)
    }

    /// Runs `blobstream ARGS` to its end, off the cooperative pool (`ProgramRuns`); stderr
    /// collected.
    static func run(_ arguments: [String], environment: [String: String], stdin: Data? = nil) async throws -> Result {
        try await ProgramRuns.run {
            let (process, err) = try start(arguments, environment: environment, stdin: stdin)
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Result(status: process.terminationStatus, stderr: String(decoding: stderr, as: UTF8.self))
        }
    }

    /// Runs `command` as a user would paste it: `/bin/sh -c`, with the built `blobstream`
    /// first on the `PATH`; off the cooperative pool.
    static func runShell(_ command: String, environment: [String: String]) async throws -> Result {
        try await ProgramRuns.run { try runShellBlocking(command, environment: environment) }
    }

    private static func runShellBlocking(_ command: String, environment: [String: String]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        var environment = environment
        let folder = URL(fileURLWithPath: binary).deletingLastPathComponent().path
        environment["PATH"] = folder + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        process.environment = environment
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stderr: String(decoding: stderr, as: UTF8.self))
    }
}

@Suite("blobstream upload --to s3://", .serialized)
struct S3ToolTests {
    @Test("a file in parts, content type and metadata; the final line names bytes, parts, time and rate")
    func file() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("big", count: 11 << 20 | 99)
        let result = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/a/big.bin", "--endpoint-url", fixture.store.endpoint,
                "--part-size", "5MiB", "--parallel", "2", "--content-type", "application/x-big", "--metadata",
                "origin=tool",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("uploaded \(data.count) bytes"))
        #expect(result.stderr.contains("in 3 parts"))
        // The rate, then the object's CRC-64/NVME (computed here: the store keeps none).
        #expect(result.stderr.contains("/s, CRC64NVME "), "\(result.stderr)")
        #expect(result.stderr.hasSuffix("; computed here)\n"), "\(result.stderr)")
        #expect(sha256Hex(try await fixture.stored("a/big.bin")) == sha256Hex(data))
        #expect(try await fixture.client.headObject(fixture.location("a/big.bin")).contentType == "application/x-big")
    }

    @Test("--quiet: nothing on stderr, neither the upload's id nor the final line; the object is stored")
    func quiet() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("quiet", count: 6 << 20 | 7)
        let result = try await S3Tool.run(
            [
                "upload", "--quiet", path, "--to", "s3://\(fixture.bucket)/q.bin", "--endpoint-url",
                fixture.store.endpoint, "--part-size", "5MiB",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        #expect(sha256Hex(try await fixture.stored("q.bin")) == sha256Hex(data))
    }

    @Test("standard input, which cannot seek")
    func standardInput() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(6 << 20, seed: 5)
        let result = try await S3Tool.run(
            [
                "upload", "-", "--to", "s3://\(fixture.bucket)/stdin", "--endpoint-url", fixture.store.endpoint,
                "--part-size", "5MiB",
            ],
            environment: S3Tool.environment(fixture.store, home: fixture.folder), stdin: data)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("in 2 parts"))
        #expect(try await fixture.stored("stdin") == data)
    }

    @Test("wrong credentials: exit 1 and one line naming the refusal")
    func wrongCredentials() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, _) = try fixture.file("f", count: 1000)
        let result = try await S3Tool.run(
            ["upload", path, "--to", "s3://\(fixture.bucket)/k", "--endpoint-url", fixture.store.endpoint],
            environment: S3Tool.environment(fixture.store, secret: "wrong", home: fixture.folder))
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("PutObject s3://\(fixture.bucket)/k"))
        #expect(result.stderr.contains("SignatureDoesNotMatch") || result.stderr.contains("AccessDenied"))
    }

    @Test(
        "usage errors exit 2",
        arguments: [
            ["--to", "s3://bucket"], ["--to", "s3://b/k", "--part-size", "1MiB"],
            ["--to", "s3://b/k", "--parallel", "0"],
            ["--to", "s3://b/k", "--metadata", "novalue"], ["--to", "http://127.0.0.1:1/x", "--resume"],
        ])
    func usage(_ arguments: [String]) async throws {
        let result = try await S3Tool.run(["upload", "/dev/null"] + arguments, environment: Self.offlineEnvironment)
        #expect(result.status == 2, "\(result.stderr)")
    }

    /// Credentials of no store, and a HOME of no profile.
    static var offlineEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_ACCESS_KEY_ID"] = "k"
        environment["AWS_SECRET_ACCESS_KEY"] = "s"
        environment["HOME"] = FileManager.default.temporaryDirectory.path
        return environment
    }

    @Test(
        "--part-size outside S3's 5 MiB to 5 GiB: exit 2, one line naming the limits",
        arguments: ["4MiB", "5368709121", "6GiB"])
    func partSizeOutsideS3Limits(_ size: String) async throws {
        let result = try await S3Tool.run(
            ["upload", "/dev/null", "--to", "s3://b/k", "--endpoint-url", "http://127.0.0.1:1", "--part-size", size],
            environment: Self.offlineEnvironment)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("--part-size must be 5MiB to 5GiB"), "\(result.stderr)")
        #expect(result.stderr.contains("not \(size)"), "\(result.stderr)")
    }

    @Test(
        "standard input with a part larger than one buffer holds: exit 2 naming the limit, nothing sent",
        arguments: ["5GiB", "4GiB"])
    func pipePartOverMemoryLimit(_ size: String) async throws {
        // The endpoint refuses connections: a request would fail with exit 1, not 2.
        let result = try await S3Tool.run(
            ["upload", "-", "--to", "s3://b/k", "--endpoint-url", "http://127.0.0.1:1", "--part-size", size],
            environment: Self.offlineEnvironment, stdin: Data("a few bytes".utf8))
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix("blobstream: --part-size \(size): standard input cannot seek"), "\(result.stderr)")
        #expect(
            result.stderr.contains("one part buffer holds, \(S3UploadOptions.largestPartInMemory) bytes"),
            "\(result.stderr)")
    }

    @Test("--part-size 5GiB, S3's largest part, on a small file: one request, the file's bytes")
    func largestPartSizeSmallFile() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("small", count: 3 << 20 | 1, seed: 7)
        let result = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/largest", "--endpoint-url", fixture.store.endpoint,
                "--part-size", "5GiB",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("uploaded \(data.count) bytes"), "\(result.stderr)")
        #expect(result.stderr.contains("in 1 request"), "\(result.stderr)")
        #expect(sha256Hex(try await fixture.stored("largest")) == sha256Hex(data))
    }

    @Test("a process killed mid-upload: --upload-id continues it, the object is whole")
    func killedThenResumed() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        // Parts after the first go through a proxy that holds each for 0.5 s: the store's
        // listings (which lag behind on a busy machine) see a part long before the last is sent.
        let proxy = try await FaultProxy.start(upstream: fixture.store.endpoint)
        defer { proxy.stop() }
        try await proxy.setRules([.delay(0.5, method: "PUT", path: "partNumber=", nth: 2, times: 0)])
        let (path, data) = try fixture.file("big", count: 40 << 20, seed: 11)
        let arguments = [
            "upload", path, "--to", "s3://\(fixture.bucket)/resumed", "--part-size", "5MiB", "--parallel", "1",
        ]
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        let (process, _) = try S3Tool.start(arguments + ["--endpoint-url", proxy.endpoint], environment: environment)
        // Wait until the store holds a part, then kill the tool (no chance to abort).
        let location = fixture.location("resumed")
        var stored = 0
        var uploadID = ""
        _ = try await SwiftStoreTestServer.poll(upTo: .seconds(60)) {
            if let upload = try await fixture.client.listMultipartUploads(location).first {
                stored = try await fixture.client.listParts(location, uploadID: upload.uploadID).count
                uploadID = upload.uploadID
            }
            return stored > 0 || !process.isRunning
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try #require(stored > 0, "the tool finished before a part was seen")
        // By id: Swift updates container listings (ListMultipartUploads, ListParts) in the
        // background, so on a busy machine a listing may lag; a part it misses is sent again.
        let result = try await S3Tool.run(
            arguments + ["--endpoint-url", fixture.store.endpoint, "--upload-id", uploadID], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("in 8 parts"))
        #expect(sha256Hex(try await fixture.stored("resumed")) == sha256Hex(data))
    }
}
