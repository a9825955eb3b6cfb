import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamSources
import BlobStreamTestSupport
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// `BlobSources` with `StoreSchemes`, the library's composition root, reads what `blobstream`
/// reads with the same requests: a `gzip:s3://…` object at an offset through the index object
/// beside it, and an `archive:s3://…!/member` through the member index beside the archive.
/// A fault proxy in front of the store logs every request of each. Three readers: the library
/// in this process, the tool, and `ComposedRead` of Fixtures/ConsumerPackage, a package that
/// depends on BlobStream by path and reads through `BlobSources(remote: StoreSchemes())`
/// alone, the store found in the environment as the tool finds it.
@Suite("The composition root: the library's requests are the tool's", .serialized)
struct CompositionRootTests {
    /// What was asked of the store, as "METHOD target range", hedges aside: a hedge repeats a
    /// range another GET asks for (a block's, or the first block of an open-ended first GET)
    /// when that GET is slow to answer, which depends on the machine's load, not on what is
    /// read. Sorted, each once.
    static func requests(_ log: [FaultProxy.Seen]) -> [String] {
        let all = log.map { (method: $0.method, target: $0.target, range: $0.headers["range"] ?? "-") }
        let openEnded = Set(all.filter { $0.range.hasSuffix("-") }.map { "\($0.target) \($0.range)" })
        let asked = all.filter { request in
            guard request.range.hasPrefix("bytes="), !request.range.hasSuffix("-"),
                let dash = request.range.firstIndex(of: "-")
            else { return true }
            return !openEnded.contains("\(request.target) \(request.range[..<dash])-")
        }
        return Set(asked.map { "\($0.method) \($0.target) \($0.range)" }).sorted()
    }

    /// Opens `url` at `offset` and reads `length` bytes (nil: to its clean end) through
    /// `registry` with the calls `blobstream cat --offset --length` makes (seek, open, then a
    /// lent buffer when the source has one, else a read), off the cooperative pool.
    static func read(_ url: String, registry: DataSourceRegistry, offset: Int64, length: Int?) async throws -> Data {
        try await offThePool {
            let stream = try BlobInputStream(url: url, registry: registry, mode: .synchronous)
            if offset > 0 { try stream.seek(to: offset) }
            stream.open()
            defer { stream.close() }
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 128 << 10)
            var lent: UnsafeMutablePointer<UInt8>?
            var lentCount = 0
            while data.count < length ?? Int.max {
                let left = (length ?? Int.max) - data.count
                if stream.getBuffer(&lent, length: &lentCount), let lent {
                    data.append(lent, count: min(lentCount, left))
                    continue
                }
                let n = stream.read(&buffer, maxLength: min(buffer.count, left))
                if n == 0, length == nil { return data }
                if n <= 0 { throw stream.streamError ?? BlobStreamError(.truncated, "\(url): ended at \(data.count)") }
                data.append(buffer, count: n)
            }
            if length != nil { try stream.readOnToCheckPoint() }
            return data
        }
    }

    /// The shared store behind a proxy that logs every request, a bucket of its own, and the
    /// tool's environment pointed at the proxy. The caller stops the proxy and cleans up.
    static func proxiedStore() async throws -> (FaultProxy, StoreFixture, [String: String]) {
        let store = try await SwiftStoreTestServer.shared()
        let proxy = try await FaultProxy.start(upstream: store.endpoint)
        let fixture: StoreFixture
        do {
            fixture = try await StoreFixture(endpoint: proxy.endpoint)
        } catch {
            proxy.stop()
            throw error
        }
        var environment = S3ReadToolTests.environment(fixture)
        environment["AWS_ENDPOINT_URL"] = proxy.endpoint
        return (proxy, fixture, environment)
    }

    /// Fixtures/ConsumerPackage's `ComposedRead`, built by `make test` and `make tsan` before
    /// the tests (`swift build --product ComposedRead` in that folder).
    static let composedRead = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/ConsumerPackage/.build/debug/ComposedRead").path

    @Test(
        "gzip:s3:// at an offset through KEY.gzidx, and archive:s3://…!/member through KEY.blobidx: same bytes, same requests (hedges aside) from the library, the tool and a package using it by path"
    )
    func sameRequestsAsTheTool() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.composedRead),
            "no \(Self.composedRead): build it first (cd Fixtures/ConsumerPackage && swift build --product ComposedRead)"
        )
        let (proxy, fixture, environment) = try await Self.proxiedStore()
        defer { proxy.stop() }
        defer { fixture.cleanUp() }
        // A gzip object and its index beside it (built by the tool), and a tar and its member index.
        let (gz, text) = try S3GzipIndexTests.gzipObject(1_500_000, seed: 12)
        _ = try await fixture.client.putObject(fixture.location("t.gz"), body: ByteBuffer(bytes: gz))
        let tarURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/archives/photos.tar")
        let tar = try Data(contentsOf: tarURL)
        _ = try await fixture.client.putObject(fixture.location("photos.tar"), body: ByteBuffer(bytes: tar))
        for key in ["t.gz", "photos.tar"] {
            let built = try await S3ReadToolTests.run(
                ["index", "--spacing", "65536", "s3://\(fixture.bucket)/\(key)"], environment: environment)
            try #require(built.status == 0, "\(built.stderr)")
        }
        let photo = try Data(
            contentsOf: tarURL.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("files/photo.jpg"))
        // A range of the gzip object (`cat --offset --length`), the whole member (`cat`).
        let reads: [(url: String, offset: Int64, length: Int?, expected: Data)] = [
            ("gzip:s3://\(fixture.bucket)/t.gz", 1_000_000, 100_000, text.subdata(in: 1_000_000..<1_100_000)),
            ("archive:s3://\(fixture.bucket)/photos.tar!/DCIM/100TEST/IMG_0001.JPG", 0, nil, photo),
        ]
        let pool = HTTPClientPool(connection: HTTPConnectionOptions())
        let configuration = fixture.client.configuration
        let sources = BlobSources(remote: StoreSchemes(pool: pool) { configuration })
        for read in reads {
            // Every exchange before (the index builds' PUTs) over and logged, then forgotten:
            // a PUT the proxy finishes after the tool has its answer is not the library's.
            _ = await proxy.settledLog()
            try await proxy.clearLog()
            let got = try await Self.read(
                read.url, registry: sources.makeRegistry(), offset: read.offset, length: read.length)
            #expect(got == read.expected, "\(read.url): the library's bytes")
            let library = Self.requests(await proxy.settledLog())
            try await proxy.clearLog()
            var arguments = ["cat"]
            if read.offset > 0 { arguments += ["--offset", "\(read.offset)"] }
            if let length = read.length { arguments += ["--length", "\(length)"] }
            arguments.append(read.url)
            let tool = try await S3ReadToolTests.run(arguments, environment: environment)
            #expect(tool.status == 0 && tool.stdout == read.expected, "\(read.url): \(tool.stderr)")
            // The tool's process has ended: every exchange it had is over, and logged.
            let toolRequests = Self.requests(await proxy.settledLog())
            #expect(library == toolRequests, "\(read.url): the library's requests, then the tool's")
            // The package that depends on BlobStream by path, with the tool's arguments.
            try await proxy.clearLog()
            let consumer = try await S3ReadToolTests.run(
                arguments, environment: environment, executable: Self.composedRead)
            #expect(consumer.status == 0 && consumer.stdout == read.expected, "\(read.url): \(consumer.stderr)")
            let consumerRequests = Self.requests(await proxy.settledLog())
            #expect(consumerRequests == toolRequests, "\(read.url): the consumer package's requests, then the tool's")
            if read.url.hasPrefix("archive:") {
                // A small member inside the first answer's block: nothing read ahead past it.
                #expect(library.filter { $0.contains("photos.tar bytes=") }.count == 1, "\(library)")
            }
            // Through the index beside the object: it was asked for.
            #expect(library.contains { $0.contains(".gzidx") || $0.contains(".blobidx") }, "\(library)")
        }
        try await pool.shutdown()
    }

    @Test(
        "cat --offset zstd:s3://… of a seekable file: its seek table from the object's end, asked for beside the first request; then one frame, and no index looked for"
    )
    func seekTableBesideTheFirstRequest() async throws {
        let (proxy, fixture, environment) = try await Self.proxiedStore()
        defer { proxy.stop() }
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(3_000_000, seed: 31)
        let plain = fixture.folder.appendingPathComponent("data")
        try data.write(to: plain)
        let local = fixture.folder.appendingPathComponent("s.zst")
        let made = try await S3ReadToolTests.run(
            ["compress", "--seekable", "--frame-size", "256KiB", plain.path, "-o", local.path], environment: environment
        )
        try #require(made.status == 0, "\(made.stderr)")
        let file = try Data(contentsOf: local)
        _ = try await fixture.client.putObject(fixture.location("s.zst"), body: ByteBuffer(bytes: file))
        _ = await proxy.settledLog()
        try await proxy.clearLog()
        let read = try await S3ReadToolTests.run(
            ["cat", "--offset", "2900000", "--length", "1000", "zstd:s3://\(fixture.bucket)/s.zst"],
            environment: environment)
        #expect(read.status == 0 && read.stdout == data[2_900_000..<2_901_000], "\(read.stderr)")
        let requests = Self.requests(await proxy.settledLog())
        let object = requests.filter { $0.hasPrefix("GET /\(fixture.bucket)/s.zst ") }
        // The first answer (from the start), the end beside it (footer and table), the frame.
        #expect(object.count == 3, "\(requests)")
        #expect(object.contains("GET /\(fixture.bucket)/s.zst bytes=-65536"), "\(requests)")
        // No frame index looked for beside it: a seekable object needs none.
        #expect(requests.filter { $0.contains("s.zst.zstidx") }.isEmpty, "\(requests)")
        #expect(requests.count == 3, "\(requests)")
        // A whole read of a one-frame object asks for nothing but the object.
        let one = try await S3Tool.runShell(
            "zstd -q -c '\(plain.path)' > '\(fixture.folder.path)/one.zst'", environment: environment)
        try #require(one.status == 0, "\(one.stderr)")
        let oneFile = try Data(contentsOf: fixture.folder.appendingPathComponent("one.zst"))
        _ = try await fixture.client.putObject(fixture.location("one.zst"), body: ByteBuffer(bytes: oneFile))
        _ = await proxy.settledLog()
        try await proxy.clearLog()
        let whole = try await S3ReadToolTests.run(
            ["checksum", "zstd:s3://\(fixture.bucket)/one.zst"], environment: environment)
        #expect(
            whole.status == 0 && String(decoding: whole.stdout, as: UTF8.self).hasPrefix(sha256Hex(data)),
            "\(whole.stderr)")
        let wholeRequests = Self.requests(await proxy.settledLog())
        #expect(wholeRequests.allSatisfy { $0.hasPrefix("GET /\(fixture.bucket)/one.zst bytes=") }, "\(wholeRequests)")
        #expect(!wholeRequests.contains { $0.contains("bytes=-") }, "\(wholeRequests)")
    }
}
