import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamTestSupport
import BlobStreamUpload
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SwiftStoreTestServer
import Testing

/// A copy in parts (`upload s3://… --to s3://…`) reads one version of its source, and is
/// checked against the `FULL_OBJECT` CRC the source keeps however it is made (`--build-index`
/// too); the tool's last line says whether it was checked.
@Suite("S3 copies in parts: one version of the source, checked or said unchecked", .serialized)
struct S3CopyIntegrityTests {
    /// 12 MiB and 5 bytes: three parts of 5 MiB.
    static let data = StoreFixture.bytes((12 << 20) + 5, seed: 91)
    /// Another object of the same length.
    static let other = StoreFixture.bytes((12 << 20) + 5, seed: 92)
    static let partSize = 5 << 20

    /// A body of `url`'s `s3://` sources, as `blobstream upload` makes it, each GET seen
    /// by `hook` before it is signed.
    static func body(
        _ url: String, configuration: S3Configuration, hook: @escaping HTTPRangeOptions.Prepare = { _ in }
    ) -> UploadBody {
        UploadBody(length: nil, repeatable: true, name: url) {
            try S3Sources.makeSource(url: url, configuration: configuration, options: HTTPRangeOptions(prepare: hook))
        }
    }

    /// `location` holds no object, and no unfinished upload of it is left.
    static func expectNothingStored(at location: S3Location, in fixture: StoreFixture) async throws {
        do {
            let info = try await fixture.client.headObject(location)
            Issue.record("\(location) was stored, \(info.size) bytes")
        } catch let error as BlobStreamError {
            #expect(error.code == .notFound, "\(error)")
        }
        #expect(try await fixture.client.listMultipartUploads(location).isEmpty)
    }

    @Test(
        "a copy in parts whose source is replaced (same length) after its first part was read fails with .changed naming both ETags: nothing stored, no upload open; unreplaced, it stores the source's bytes"
    )
    func replacedMidCopy() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let source = fixture.location("source.bin")
        let destination = fixture.location("copy.bin")
        _ = try await fixture.client.putObject(source, body: ByteBuffer(bytes: Self.data))
        let before = try await fixture.client.headObject(source).etag
        let uploader = S3Uploader(
            client: fixture.client, options: S3UploadOptions(partSize: Self.partSize, parallelism: 1))

        // The GET of the second part's first bytes is held until the source is replaced:
        // the first part was read from the first version, the rest would be the second's.
        let replaced = NIOLockedValueBox(false)
        let client = fixture.client
        let hook: HTTPRangeOptions.Prepare = { request in
            guard request.range.lowerBound == Int64(Self.partSize),
                replaced.withLockedValue({ done in
                    defer { done = true }
                    return !done
                })
            else { return }
            // On the part's reading thread (a queue of the uploader's, not the pool's).
            let put = DispatchSemaphore(value: 0)
            Task.detached {
                _ = try? await client.putObject(source, body: ByteBuffer(bytes: Self.other))
                put.signal()
            }
            put.wait()
        }
        let spliced = uploader.upload(
            Self.body(source.description, configuration: fixture.client.configuration, hook: hook), to: destination)
        do {
            let result = try await spliced.result
            let stored = try await fixture.stored("copy.bin")
            Issue.record(
                "the copy succeeded (ETag \(result.entityTag ?? "")): first part of the first version \(stored.prefix(Self.partSize) == Self.data.prefix(Self.partSize)), the rest of the second \(stored.dropFirst(Self.partSize) == Self.other.dropFirst(Self.partSize))"
            )
        } catch let error as BlobStreamError {
            #expect(error.code == .changed, "\(error)")
            #expect(error.message.contains(source.description), "\(error)")
            let after = try await fixture.client.headObject(source).etag
            #expect(after != before)
            #expect(error.message.contains(before) && error.message.contains(after), "\(error)")
            #expect(error.message.contains("nothing was stored at \(destination)"), "\(error)")
        }
        #expect(replaced.withLockedValue { $0 })
        try await Self.expectNothingStored(at: destination, in: fixture)

        // Unreplaced, the copy is the source's bytes.
        _ = try await fixture.client.putObject(source, body: ByteBuffer(bytes: Self.data))
        let honest = try await uploader.upload(
            Self.body(source.description, configuration: fixture.client.configuration), to: destination
        ).result
        #expect(honest.parts == 3)
        #expect(sha256Hex(try await fixture.stored("copy.bin")) == sha256Hex(Self.data))
    }

    @Test(
        "`upload s3://… --to s3://… --build-index`: a flipped byte under the source's FULL_OBJECT CRC fails the copy in parts as without the flag"
    )
    func buildIndex() async throws {
        let (proxy, fixture) = try await S3WholeReadCheckTests.storedBehindProxy()
        defer { proxy.stop() }
        defer { fixture.cleanUp() }
        var environment = S3ReadToolTests.environment(fixture)
        environment["AWS_ENDPOINT_URL"] = proxy.endpoint
        let source = "s3://\(fixture.bucket)/whole.bin"
        let crc = S3WholeReadCheckTests.crc64
        let kept = FaultProxy.Rule.rewrite(
            headers: ["x-amz-checksum-crc64nvme": crc.base64, "x-amz-checksum-type": "FULL_OBJECT"], method: "HEAD",
            path: "/whole\\.bin", times: 0)
        let flip = FaultProxy.Rule.flipAnswer(method: "GET", path: "/whole\\.bin", times: 0, offset: 1000)
        let destination = fixture.location("copy.bin")

        try await proxy.setRules([kept, flip])
        let flipped = try await S3ReadToolTests.run(
            ["upload", "--quiet", source, "--to", destination.description, "--part-size", "5MiB", "--build-index"],
            environment: environment)
        #expect(flipped.status == 1, "\(flipped.stderr)")
        #expect(flipped.stderr.contains("FULL_OBJECT CRC64NVME \(crc.base64)"), "\(flipped.stderr)")
        #expect(flipped.stderr.contains("nothing was stored at \(destination)"), "\(flipped.stderr)")
        do {
            let info = try await fixture.client.headObject(destination)
            Issue.record("\(destination) was stored, \(info.size) bytes")
        } catch let error as BlobStreamError {
            #expect(error.code == .notFound, "\(error)")
        }
        #expect(try await fixture.client.listMultipartUploads(destination).isEmpty)
    }

    @Test(
        "a copy in parts of a body observed as it is read (UploadBody.observed(by:), which wraps its first source): a flipped byte under the source's FULL_OBJECT CRC fails it as without the observer"
    )
    func observedBody() async throws {
        let (proxy, fixture) = try await S3WholeReadCheckTests.storedBehindProxy()
        defer { proxy.stop() }
        defer { fixture.cleanUp() }
        var configuration = fixture.client.configuration
        configuration.endpoint = URL(string: proxy.endpoint)!
        let source = "s3://\(fixture.bucket)/whole.bin"
        let crc = S3WholeReadCheckTests.crc64
        let kept = FaultProxy.Rule.rewrite(
            headers: ["x-amz-checksum-crc64nvme": crc.base64, "x-amz-checksum-type": "FULL_OBJECT"], method: "HEAD",
            path: "/whole\\.bin", times: 0)
        let flip = FaultProxy.Rule.flipAnswer(method: "GET", path: "/whole\\.bin", times: 0, offset: 1000)
        let destination = fixture.location("copy.bin")
        let uploader = S3Uploader(
            client: fixture.client, options: S3UploadOptions(partSize: Self.partSize, parallelism: 2))
        let body = Self.body(source, configuration: configuration).observed(by: Watcher())

        try await proxy.setRules([kept, flip])
        do {
            let result = try await uploader.upload(body, to: destination).result
            Issue.record("the flipped copy was stored: \(result.parts) parts, ETag \(result.entityTag ?? "")")
        } catch let error as BlobStreamError {
            #expect(error.code == .corrupt, "\(error)")
            #expect(error.message.contains("FULL_OBJECT CRC64NVME \(crc.base64)"), "\(error)")
            #expect(error.message.contains("nothing was stored at \(destination)"), "\(error)")
        }
        try await Self.expectNothingStored(at: destination, in: fixture)

        try await proxy.setRules([kept])
        let observed = Self.body(source, configuration: configuration).observed(by: Watcher())
        let honest = try await uploader.upload(observed, to: destination).result
        #expect(honest.parts == 5)
        #expect(sha256Hex(try await fixture.stored("copy.bin")) == sha256Hex(S3WholeReadCheckTests.data))
    }

    @Test(
        "the tool's last line says whether a copy was checked at its source: unchecked and why on a store that keeps no checksum, checked against the FULL_OBJECT CRC one keeps (in one PUT and in parts); nothing for a file"
    )
    func notes() async throws {
        let (proxy, fixture) = try await S3WholeReadCheckTests.storedBehindProxy()
        defer { proxy.stop() }
        defer { fixture.cleanUp() }
        let direct = S3ReadToolTests.environment(fixture)
        var proxied = direct
        proxied["AWS_ENDPOINT_URL"] = proxy.endpoint
        let source = "s3://\(fixture.bucket)/whole.bin"
        let destination = "s3://\(fixture.bucket)/copy.bin"
        let crc = S3WholeReadCheckTests.crc64
        try await proxy.setRules([
            .rewrite(
                headers: ["x-amz-checksum-crc64nvme": crc.base64, "x-amz-checksum-type": "FULL_OBJECT"],
                method: "HEAD", path: "/whole\\.bin", times: 0)
        ])
        for (shape, partSize, combined) in [
            ("one PUT", "32MiB", ""), ("5 parts", "5MiB", " (the 5 parts' CRCs combined)"),
        ] {
            let unchecked = try await S3ReadToolTests.run(
                ["upload", source, "--to", destination, "--part-size", partSize], environment: direct)
            #expect(unchecked.status == 0, "\(shape): \(unchecked.stderr)")
            #expect(
                unchecked.stderr.contains(", copy unchecked: the store keeps no checksum of the object"),
                "\(shape): \(unchecked.stderr)")
            let checked = try await S3ReadToolTests.run(
                ["upload", source, "--to", destination, "--part-size", partSize], environment: proxied)
            #expect(checked.status == 0, "\(shape): \(checked.stderr)")
            #expect(
                checked.stderr.contains(
                    ", copy checked against the store's FULL_OBJECT CRC64NVME \(crc.base64)\(combined)"),
                "\(shape): \(checked.stderr)")
            #expect(sha256Hex(try await fixture.stored("copy.bin")) == sha256Hex(S3WholeReadCheckTests.data))
        }
        let file = try fixture.file("local.bin", count: 12 << 20, seed: 5)
        let local = try await S3ReadToolTests.run(
            ["upload", file.path, "--to", destination, "--part-size", "5MiB"], environment: direct)
        #expect(local.status == 0, "\(local.stderr)")
        #expect(local.stderr.contains("uploaded") && !local.stderr.contains(", copy "), "\(local.stderr)")
    }

    @Test(
        "a checked copy sends one HEAD of its source (more only as its hedges): in parts (none for a part's own source) and in one PUT (none for its second pass)"
    )
    func oneHead() async throws {
        let (proxy, fixture) = try await S3WholeReadCheckTests.storedBehindProxy()
        defer { proxy.stop() }
        defer { fixture.cleanUp() }
        var environment = S3ReadToolTests.environment(fixture)
        environment["AWS_ENDPOINT_URL"] = proxy.endpoint
        let source = "s3://\(fixture.bucket)/whole.bin"
        let crc = S3WholeReadCheckTests.crc64
        for partSize in ["5MiB", "32MiB"] {
            try await proxy.setRules([
                .rewrite(
                    headers: ["x-amz-checksum-crc64nvme": crc.base64, "x-amz-checksum-type": "FULL_OBJECT"],
                    method: "HEAD", path: "/whole\\.bin", times: 0)
            ])
            _ = await proxy.settledLog()
            try await proxy.clearLog()
            let copy = try await S3ReadToolTests.run(
                ["upload", source, "--to", "s3://\(fixture.bucket)/copy.bin", "--part-size", partSize],
                environment: environment)
            #expect(copy.status == 0, "\(partSize): \(copy.stderr)")
            #expect(copy.stderr.contains(", copy checked against"), "\(partSize): \(copy.stderr)")
            let heads = await proxy.settledLog().filter { $0.method == "HEAD" && $0.target.contains("/whole.bin") }
            #expect(S3WholeReadCheckTests.oneAndItsHedges(heads), "\(partSize): \(heads.count) HEADs")
        }
    }
}

/// Sees an upload's bytes, and nothing else.
private final class Watcher: UploadBodyObserver, @unchecked Sendable {
    func observe(_ bytes: UnsafeRawBufferPointer) {}
    func lostOrder(_ why: String) {}
}
