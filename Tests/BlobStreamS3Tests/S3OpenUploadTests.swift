import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import SwiftStoreTestServer
import Testing

/// A failure that leaves a multipart upload on the store says so: the store is cut (a proxy
/// in front of it resets every part after the first, and the abort) mid-upload, so the
/// upload stays open; the error names it and the ways out, which work once the store is back.
@Suite("S3 uploads left open on the store", .serialized)
struct S3OpenUploadTests {
    /// Every part after the first and every abort reset: the store is gone mid-upload.
    static let storeGone: [FaultProxy.Rule] = [
        .drop(method: "PUT", path: "partNumber=", nth: 2, times: 0), .drop(method: "DELETE", times: 0),
    ]

    /// Waits (bounded) until the store's listing of `location`'s unfinished uploads does or
    /// does not hold `id`: Swift updates its listings in the background.
    static func awaitListing(
        _ fixture: StoreFixture, _ location: S3Location, id: String, listed: Bool
    ) async throws -> Bool {
        try await SwiftStoreTestServer.poll(upTo: .seconds(30)) {
            try await fixture.client.listMultipartUploads(location).map(\.uploadID).contains(id) == listed
        }
    }

    /// The command between backticks after `lead` in `line`.
    static func command(after lead: String, in line: String) throws -> String {
        let start = try #require(line.range(of: lead + "`"), "no \(lead) in \(line)")
        let rest = line[start.upperBound...]
        return String(rest.prefix { $0 != "`" })
    }

    /// The failed upload through a proxy that cuts the store; its stderr and the upload id.
    static func failedUpload(_ fixture: StoreFixture, proxy: FaultProxy, key: String) async throws -> (
        stderr: String, id: String, data: Data
    ) {
        let (path, data) = try fixture.file(key, count: 11 << 20 | 5, seed: 51)
        try await proxy.setRules(storeGone)
        let failed = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/\(key)", "--endpoint-url", proxy.endpoint,
                "--part-size", "5MiB", "--parallel", "1",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(failed.status == 1, "\(failed.stderr)")
        let started = try #require(
            failed.stderr.split(separator: "\n").first { $0.hasPrefix("started multipart upload ") },
            "\(failed.stderr)")
        let id = String(started.dropFirst("started multipart upload ".count).prefix { $0 != " " })
        return (failed.stderr, id, data)
    }

    @Test("the store gone mid-upload: the error line names the upload and both commands; the abort command ends it")
    func storeGoneThenAborted() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let proxy = try await FaultProxy.start(upstream: fixture.store.endpoint)
        defer { proxy.stop() }
        let (stderr, id, _) = try await Self.failedUpload(fixture, proxy: proxy, key: "cut")
        let line = try #require(stderr.split(separator: "\n").last.map(String.init))
        #expect(line.contains("UploadPart 2"), "\(line)")
        #expect(line.contains("multipart upload \(id) is left open on the store"), "\(line)")
        let to = "s3://\(fixture.bucket)/cut"
        let resume = try Self.command(after: "resume it with ", in: line)
        #expect(resume.hasPrefix("blobstream upload "), "\(line)")
        #expect(resume.contains(" --to \(to) --upload-id \(id)"), "\(line)")
        let abort = try Self.command(after: "or abort it with ", in: line)
        #expect(abort == "blobstream upload --abort --upload-id \(id) --to \(to) --endpoint-url \(proxy.endpoint)")
        let location = fixture.location("cut")
        #expect(try await Self.awaitListing(fixture, location, id: id, listed: true), "the upload is not open")

        // The store is back: the printed command, as printed, ends the upload.
        try await proxy.setRules([])
        let aborted = try await S3Tool.runShell(
            abort, environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(aborted.status == 0, "\(aborted.stderr)")
        #expect(aborted.stderr == "aborted multipart upload \(id) of \(to): its parts are gone\n")
        #expect(try await Self.awaitListing(fixture, location, id: id, listed: false), "the upload is still listed")
    }

    @Test("the store gone mid-upload: the printed resume command completes the upload with the file's bytes")
    func storeGoneThenResumed() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let proxy = try await FaultProxy.start(upstream: fixture.store.endpoint)
        defer { proxy.stop() }
        let (stderr, id, data) = try await Self.failedUpload(fixture, proxy: proxy, key: "resumed")
        let line = try #require(stderr.split(separator: "\n").last.map(String.init))
        let resume = try Self.command(after: "resume it with ", in: line)
        try await proxy.setRules([])
        let resumed = try await S3Tool.runShell(
            resume, environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("continuing multipart upload \(id) of s3://\(fixture.bucket)/resumed"))
        #expect(resumed.stderr.contains("in 3 parts"), "\(resumed.stderr)")
        #expect(sha256Hex(try await fixture.stored("resumed")) == sha256Hex(data))
    }

    @Test("--abort with an upload id the store does not know: exit 1, a line naming it")
    func abortUnknown() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let to = "s3://\(fixture.bucket)/nothing"
        let result = try await S3Tool.run(
            [
                "upload", "--abort", "--upload-id", "no-such-upload", "--to", to, "--endpoint-url",
                fixture.store.endpoint,
            ],
            environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix("blobstream: no unfinished upload no-such-upload of \(to) to abort"),
            "\(result.stderr)")
    }

    @Test(
        "--abort usage errors exit 2, one line naming the rule",
        arguments: [
            (["--abort", "--to", "s3://b/k"], "--abort needs the --upload-id"),
            (["/dev/null", "--abort", "--upload-id", "x", "--to", "s3://b/k"], "takes no source (/dev/null given)"),
            (["--abort", "--upload-id", "x", "--to", "s3://b/k", "--resume"], "--resume does not apply"),
            (["--abort", "--upload-id", "x", "--to", "http://127.0.0.1:1/x"], "the S3 options need --to s3://"),
            (["--to", "s3://b/k"], "name the SOURCE to upload"),
        ])
    func abortUsage(_ arguments: [String], _ rule: String) async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_ACCESS_KEY_ID"] = "k"
        environment["AWS_SECRET_ACCESS_KEY"] = "s"
        environment["HOME"] = FileManager.default.temporaryDirectory.path
        let result = try await S3Tool.run(["upload"] + arguments, environment: environment)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(rule), "\(result.stderr)")
    }

    @Test("the library's error carries the id of the upload it left open; none when the abort went through")
    func errorCarriesUploadID() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let proxy = try await FaultProxy.start(upstream: fixture.store.endpoint)
        defer { proxy.stop() }
        var configuration = StoreFixture.configuration(fixture.store)
        configuration.endpoint = URL(string: proxy.endpoint)!
        let client = S3Client(configuration: configuration)
        let data = StoreFixture.bytes(11 << 20, seed: 52)
        let source = UploadBody(length: nil, repeatable: true, name: "bytes") { DataBytesSource(data) }
        let started = Recorded<String?>(nil)
        var options = S3UploadOptions(
            partSize: 5 << 20, parallelism: 1, retry: HTTPRetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(10)))
        options.uploadStarted = { id in started.value.withLock { $0 = id } }

        try await proxy.setRules(Self.storeGone)
        let left = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: client).upload(source, to: fixture.location("left"), options: options).result
        }
        let id = try #require(started.value.withLock { $0 })
        #expect(left?.code == .ioFailed)
        #expect(left?.s3UploadID == id)
        #expect(left?.description.hasSuffix("; multipart upload \(id) is left open on the store") == true)
        try await proxy.setRules([])
        try await fixture.client.abortMultipartUpload(fixture.location("left"), uploadID: id)

        // Parts refused but the abort reaching the store: nothing left, no id.
        try await proxy.setRules([.drop(method: "PUT", path: "partNumber=", nth: 2, times: 0)])
        let aborted = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: client).upload(source, to: fixture.location("gone"), options: options).result
        }
        #expect(aborted?.code == .ioFailed)
        #expect(aborted?.s3UploadID == nil)
    }

    @Test("Ctrl-C mid-upload: aborted and said so; when the abort fails, the line names the upload and both commands")
    func interrupted() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let proxy = try await FaultProxy.start(upstream: fixture.store.endpoint)
        defer { proxy.stop() }
        let (path, _) = try fixture.file("interrupted", count: 40 << 20, seed: 53)
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        /// Interrupts an upload of the file once the store holds a part; its status and stderr.
        func interruptedUpload(key: String) async throws -> (status: Int32, stderr: String, id: String) {
            try await proxy.clearLog()
            let (process, err) = try S3Tool.start(
                [
                    "upload", path, "--to", "s3://\(fixture.bucket)/\(key)", "--endpoint-url", proxy.endpoint,
                    "--part-size", "5MiB", "--parallel", "1",
                ], environment: environment)
            let log = await proxy.log(waitingUpTo: .seconds(60)) { log in
                log.contains { $0.target.contains("partNumber=") && $0.status == 200 }
            }
            kill(process.processIdentifier, SIGINT)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(log.contains { $0.status == 200 && $0.target.contains("partNumber=") }, "\(stderr)")
            let started = try #require(
                stderr.split(separator: "\n").first { $0.hasPrefix("started multipart upload ") }, "\(stderr)")
            let id = String(started.dropFirst("started multipart upload ".count).prefix { $0 != " " })
            return (process.terminationStatus, stderr, id)
        }
        // Every part after the first held 0.5 s: the upload is mid-way when interrupted.
        let slow = FaultProxy.Rule.delay(0.5, method: "PUT", path: "partNumber=", nth: 2, times: 0)

        try await proxy.setRules([slow, .drop(method: "DELETE", times: 0)])
        let open = try await interruptedUpload(key: "open")
        let line = try #require(open.stderr.split(separator: "\n").last.map(String.init))
        #expect(open.status == 1, "\(open.stderr)")
        let to = "s3://\(fixture.bucket)/open"
        #expect(
            line.hasPrefix("blobstream: interrupted: multipart upload \(open.id) of \(to) is left open on the store"),
            "\(line)")
        let resume = try Self.command(after: "resume it with ", in: line)
        #expect(resume.contains(" --to \(to) --upload-id \(open.id)"), "\(line)")
        let abort = try Self.command(after: "or abort it with ", in: line)
        #expect(abort == "blobstream upload --abort --upload-id \(open.id) --to \(to) --endpoint-url \(proxy.endpoint)")
        #expect(try await proxy.log().contains { $0.method == "DELETE" && $0.action == "drop" })
        let location = fixture.location("open")
        #expect(try await Self.awaitListing(fixture, location, id: open.id, listed: true), "the upload is not open")
        try await fixture.client.abortMultipartUpload(location, uploadID: open.id)

        try await proxy.setRules([slow])
        let aborted = try await interruptedUpload(key: "aborted")
        #expect(aborted.status == 1, "\(aborted.stderr)")
        #expect(
            aborted.stderr.hasSuffix(
                "blobstream: interrupted: multipart upload \(aborted.id) of s3://\(fixture.bucket)/aborted aborted, its parts are gone\n"
            ), "\(aborted.stderr)")
        #expect(try await proxy.log().contains { $0.method == "DELETE" && $0.status == 204 })
    }
}
