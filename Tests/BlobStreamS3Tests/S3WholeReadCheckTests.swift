import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamTestSupport
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// A read of an object whole, from its first byte to its end, is checked against the
/// `FULL_OBJECT` checksum the store keeps (asked for with a `HEAD` carrying
/// `x-amz-checksum-mode: ENABLED`). The store (OpenStack Swift 2.30) keeps none, so the fault
/// proxy in front of it says what a store that keeps one says, and serves flipped bytes.
@Suite("S3 reads checked whole against the store's FULL_OBJECT checksum", .serialized)
struct S3WholeReadCheckTests {
    /// 20 MiB and 3 bytes: three first-GET blocks of 8 MiB, so the object is checked.
    static let data = StoreFixture.bytes((20 << 20) + 3, seed: 71)

    static var crc64: S3Checksum {
        var crc = S3Checksum(.crc64nvme)
        crc.update(data)
        return crc
    }

    /// What the `HEAD` of a store that keeps `value` as its `type` checksum answers.
    static func kept(_ value: String, type: String = "FULL_OBJECT", algorithm: String = "crc64nvme") -> FaultProxy.Rule
    {
        .rewrite(
            headers: ["x-amz-checksum-\(algorithm)": value, "x-amz-checksum-type": type], method: "HEAD", times: 0)
    }

    /// A fixture whose bucket holds `whole.bin` (`data`), and the fault proxy in front of the store.
    /// True when `requests` are one request and, at most, its hedges (`HTTPHedging.standard`):
    /// each one more arrived after a silence of at least the hedging floor since the one
    /// before it (half of it at the proxy, room for one request's slower way there). A loaded
    /// machine can hold the first answer that long; a request per part, or per pass, would go
    /// out with its part, at once.
    static func oneAndItsHedges(_ requests: [FaultProxy.Seen]) -> Bool {
        let hedging = HTTPHedging.standard
        let requests = requests.sorted { $0.arrived < $1.arrived }
        return (1...1 + hedging.maxHedges).contains(requests.count)
            && zip(requests, requests.dropFirst()).allSatisfy { $1.arrived - $0.arrived >= hedging.floor / 2 }
    }

    static func storedBehindProxy() async throws -> (FaultProxy, StoreFixture) {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        do {
            let fixture = try await StoreFixture()
            _ = try await fixture.client.putObject(fixture.location("whole.bin"), body: ByteBuffer(bytes: data))
            return (proxy, fixture)
        } catch {
            proxy.stop()
            throw error
        }
    }

    @Test(
        "`cat s3://…`: checked through one HEAD; a flipped byte under the right checksum fails the read, naming both values"
    )
    func tool() async throws {
        let (proxy, fixture) = try await Self.storedBehindProxy()
        defer { proxy.stop() }
        defer { fixture.cleanUp() }
        var environment = S3ReadToolTests.environment(fixture)
        environment["AWS_ENDPOINT_URL"] = proxy.endpoint
        let url = "s3://\(fixture.bucket)/whole.bin"
        let crc = Self.crc64

        try await proxy.setRules([Self.kept(crc.base64)])
        let honest = try await S3ReadToolTests.run(["cat", "--verbose", url], environment: environment)
        #expect(honest.status == 0, "\(honest.stderr)")
        #expect(honest.stdout == Self.data)
        #expect(
            honest.stderr.contains("\(url): checked against the store's FULL_OBJECT CRC64NVME \(crc.base64)"),
            "\(honest.stderr)")
        let heads = await proxy.settledLog().filter { $0.method == "HEAD" }
        #expect(Self.oneAndItsHedges(heads), "\(heads)")
        #expect(heads.first?.headers["x-amz-checksum-mode"] == "ENABLED")

        // Every GET's answer has one byte flipped, under the object's own ETag: only the
        // checksum can tell. The read fails at its end, its last bytes not handed out.
        try await proxy.setRules([Self.kept(crc.base64), .flipAnswer(method: "GET", times: 0, offset: 1000)])
        let flipped = try await S3ReadToolTests.run(["cat", url], environment: environment)
        #expect(flipped.status == 1, "\(flipped.stderr)")
        #expect(flipped.stderr.contains(url), "\(flipped.stderr)")
        #expect(flipped.stderr.contains("the store keeps FULL_OBJECT CRC64NVME \(crc.base64)"), "\(flipped.stderr)")
        #expect(flipped.stdout.count < Self.data.count)

        // A read from an offset is not a whole read: no HEAD.
        try await proxy.setRules([Self.kept(crc.base64)])
        _ = await proxy.settledLog()
        try await proxy.clearLog()
        let part = try await S3ReadToolTests.run(["cat", "--offset", "1000", url], environment: environment)
        #expect(part.status == 0, "\(part.stderr)")
        #expect(part.stdout == Self.data.dropFirst(1000))
        #expect(await proxy.settledLog().filter { $0.method == "HEAD" }.isEmpty)
    }

    @Test(
        "`upload s3://… --to s3://…`: a flipped byte under the source's FULL_OBJECT CRC-64/NVME fails the copy in one PUT and the copy in parts (their CRCs combined): nothing stored, no upload left open"
    )
    func copy() async throws {
        let (proxy, fixture) = try await Self.storedBehindProxy()
        defer { proxy.stop() }
        defer { fixture.cleanUp() }
        var environment = S3ReadToolTests.environment(fixture)
        environment["AWS_ENDPOINT_URL"] = proxy.endpoint
        let source = "s3://\(fixture.bucket)/whole.bin"
        let crc = Self.crc64
        // Only the source's HEAD says what a store that keeps a checksum says; the copy's own
        // requests (to copy.bin) go through as the store answers them.
        let kept = FaultProxy.Rule.rewrite(
            headers: ["x-amz-checksum-crc64nvme": crc.base64, "x-amz-checksum-type": "FULL_OBJECT"], method: "HEAD",
            path: "/whole\\.bin", times: 0)
        // Every GET of the source has one byte flipped, under the object's own ETag.
        let flip = FaultProxy.Rule.flipAnswer(method: "GET", path: "/whole\\.bin", times: 0, offset: 1000)
        let destination = fixture.location("copy.bin")

        for (shape, partSize) in [("one PUT", "32MiB"), ("5 parts", "5MiB")] {
            try await proxy.setRules([kept, flip])
            let flipped = try await S3ReadToolTests.run(
                ["upload", "--quiet", source, "--to", destination.description, "--part-size", partSize],
                environment: environment)
            #expect(flipped.status == 1, "\(shape): \(flipped.stderr)")
            #expect(flipped.stderr.contains(source), "\(shape): \(flipped.stderr)")
            #expect(flipped.stderr.contains("FULL_OBJECT CRC64NVME \(crc.base64)"), "\(shape): \(flipped.stderr)")
            do {
                let info = try await fixture.client.headObject(destination)
                Issue.record("\(shape): \(destination) was stored, \(info.size) bytes")
            } catch let error as BlobStreamError {
                #expect(error.code == .notFound, "\(shape): \(error)")
            }
            #expect(try await fixture.client.listMultipartUploads(destination).isEmpty, "\(shape)")
            if partSize == "5MiB" {
                #expect(flipped.stderr.contains("nothing was stored at \(destination)"), "\(flipped.stderr)")
                #expect(flipped.stderr.split(separator: "\n").count == 1, "\(flipped.stderr)")
            }
        }

        // Without the flip, both copies store the source's bytes.
        try await proxy.setRules([kept])
        for partSize in ["32MiB", "5MiB"] {
            let honest = try await S3ReadToolTests.run(
                ["upload", "--quiet", source, "--to", destination.description, "--part-size", partSize],
                environment: environment)
            #expect(honest.status == 0, "\(partSize): \(honest.stderr)")
            #expect(sha256Hex(try await fixture.stored("copy.bin")) == sha256Hex(Self.data), "\(partSize)")
        }
        let heads = await proxy.settledLog().filter { $0.method == "HEAD" && $0.target.contains("/whole.bin") }
        #expect(heads.allSatisfy { $0.headers["x-amz-checksum-mode"] == "ENABLED" }, "\(heads)")
    }

    @Test(
        "the library's note: checked (CRC-64/NVME, CRC-32C), unchecked with a COMPOSITE checksum, a SHA-256 or none",
        arguments: [
            ("crc64nvme", "FULL_OBJECT", "checked against the store's FULL_OBJECT CRC64NVME"),
            ("crc32c", "FULL_OBJECT", "checked against the store's FULL_OBJECT CRC32C"),
            ("crc32c", "COMPOSITE", "unchecked: the store keeps a COMPOSITE CRC32C"),
            ("sha256", "FULL_OBJECT", "unchecked: the store keeps a SHA256 of the whole object"),
            ("none", "", "unchecked: the store keeps no checksum of the object"),
        ])
    func notes(algorithm: String, type: String, note: String) async throws {
        let (proxy, fixture) = try await Self.storedBehindProxy()
        defer { proxy.stop() }
        defer { fixture.cleanUp() }
        if let kind = S3ChecksumAlgorithm(name: algorithm) {
            var sum = S3Checksum(kind)
            sum.update(Self.data)
            try await proxy.setRules([
                Self.kept(sum.base64 + (type == "COMPOSITE" ? "-3" : ""), type: type, algorithm: algorithm)
            ])
        }
        var configuration = fixture.client.configuration
        configuration.endpoint = URL(string: proxy.endpoint)!
        let url = "s3://\(fixture.bucket)/whole.bin"
        let read = try await offThePool { [configuration] in
            let source = try S3Sources.makeSource(url: url, configuration: configuration)
            let stream = BlobInputStream(dataSource: source)
            stream.open()
            defer { stream.close() }
            let (data, last) = stream.readToEnd(chunkSize: 1 << 20)
            return (data, last, source.wholeObjectCheckNote)
        }
        #expect(read.0 == Self.data && read.1 == 0)
        #expect(read.2?.hasPrefix(note) == true, "\(String(describing: read.2))")
    }
}
