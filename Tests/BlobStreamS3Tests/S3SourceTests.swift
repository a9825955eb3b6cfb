import BlobStream
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamTestSupport
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// Runs blocking `work` (synchronous reads wait for the store) on a thread of its own, so
/// that the tests' cooperative threads stay free.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// Hands a stream to the thread that reads it, one thread at a time. Unchecked Sendable:
/// the test uses the value only from the thread it handed it to, until that one is done.
final class Handoff<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// What a read to the end gave: the bytes, the last `read` result, the source's error and length.
struct SourceRead: Sendable {
    var data: Data
    var last: Int
    var error: BlobStreamError?
    var length: Int64?
}

/// Reads the source `make` gives to its end from `offset` through a synchronous stream,
/// on a thread of its own.
func readAll(
    from offset: Int64 = 0, chunk: Int = 10_000, _ make: @escaping @Sendable () throws -> any BlobDataSource
) async throws -> SourceRead {
    try await offThePool {
        let source = try make()
        let stream = BlobInputStream(dataSource: source)
        if offset > 0 { try stream.seek(to: offset) }
        stream.open()
        defer { stream.close() }
        let (data, last) = stream.readToEnd(chunkSize: chunk)
        return SourceRead(data: data, last: last, error: source.error as? BlobStreamError, length: source.length)
    }
}

/// `S3Sources` (`s3://bucket/key` by SigV4-signed ranged GETs) against OpenStack Swift's S3 API.
@Suite("s3:// sources against OpenStack Swift's S3 API", .serialized)
struct S3SourceTests {
    /// Small blocks, so that an object of a few hundred KiB takes many GETs; no proxy or
    /// extra roots, whatever the environment of the test run says.
    static let options = HTTPRangeOptions(blockSize: 64 << 10, connection: HTTPConnectionOptions())

    func put(_ fixture: StoreFixture, _ key: String, _ data: Data) async throws {
        _ = try await fixture.client.putObject(fixture.location(key), body: ByteBuffer(bytes: data))
    }

    /// `hedged: false` for a test that counts GETs: a hedge (a silent GET asked again, which
    /// a loaded machine can cause) is another GET of the same range; hedges have tests of
    /// their own (`RemoteReadHedgeTests`).
    func source(
        _ fixture: StoreFixture, _ key: String, configuration: S3Configuration? = nil, readAhead: Int = 1,
        hedged: Bool = true
    ) -> @Sendable () throws -> any BlobDataSource {
        let url = "s3://\(fixture.bucket)/\(key)"
        let configuration = configuration ?? fixture.client.configuration
        var options = Self.options
        options.readAhead = readAhead
        if !hedged { options.hedging = nil }
        return { [options] in try S3Sources.makeSource(url: url, configuration: configuration, options: options) }
    }

    @Test(
        "a whole object and reads from many offsets equal the bytes stored (sha256); length known",
        arguments: [1, 3])
    func wholeAndOffsets(readAhead: Int) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(400_003, seed: 71)
        try await put(fixture, "dir/whole file.bin", data)
        let read = try await readAll(source(fixture, "dir/whole file.bin", readAhead: readAhead))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(read.last == 0)
        #expect(sha256Hex(read.data) == sha256Hex(data))
        #expect(read.length == 400_003)
        for offset: Int64 in [1, 65_535, 65_536, 65_537, 200_000, 400_002] {
            let got = try await readAll(
                from: offset, chunk: 7_777, source(fixture, "dir/whole file.bin", readAhead: readAhead))
            #expect(got.error == nil, "offset \(offset): \(String(describing: got.error))")
            #expect(got.last == 0)
            #expect(sha256Hex(got.data) == sha256Hex(data.subdata(in: Int(offset)..<data.count)), "offset \(offset)")
        }
    }

    @Test("through the registry: gzip:s3:// and archive:s3://…!/member compose as over files")
    func registry() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(100_000, seed: 72)
        try await put(fixture, "r.bin", data)
        let registry = DataSourceRegistry()
        S3Sources.register(in: registry, configuration: fixture.client.configuration, options: Self.options)
        let url = "s3://\(fixture.bucket)/r.bin"
        let read = try await readAll { try registry.makeSource(url: url) }
        #expect(read.error == nil && read.data == data, "\(String(describing: read.error))")
        // A configuration that cannot be found fails the source, naming its URL.
        let broken = DataSourceRegistry()
        S3Sources.register(in: broken) {
            throw BlobStreamError(.missingCredentials, "no S3 credentials")
        }
        do {
            _ = try broken.makeSource(url: "s3://\(fixture.bucket)/r.bin")
            Issue.record("a source was made without a configuration")
        } catch {
            #expect("\(error)".contains("s3://\(fixture.bucket)/r.bin") && "\(error)".contains("no S3 credentials"))
        }
    }

    @Test("a missing key: .notFound naming s3://bucket/key and NoSuchKey")
    func noSuchKey() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let read = try await readAll(source(fixture, "missing.bin"))
        #expect(read.data.isEmpty && read.last == -1)
        #expect(read.error?.code == .notFound, "\(String(describing: read.error))")
        #expect(read.error?.message.contains("s3://\(fixture.bucket)/missing.bin") == true)
        #expect(read.error?.message.contains("NoSuchKey") == true, "\(String(describing: read.error))")
    }

    @Test("wrong credentials: .permissionDenied naming s3://bucket/key, no byte")
    func wrongCredentials() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        try await put(fixture, "secret.bin", StoreFixture.bytes(1_000, seed: 73))
        var configuration = fixture.client.configuration
        configuration.credentials.secretAccessKey = "not-the-secret"
        let read = try await readAll(source(fixture, "secret.bin", configuration: configuration))
        #expect(read.data.isEmpty && read.last == -1)
        #expect(read.error?.code == .permissionDenied, "\(String(describing: read.error))")
        #expect(read.error?.message.contains("s3://\(fixture.bucket)/secret.bin") == true)
        #expect(read.error?.message.contains("403") == true)
    }

    @Test("an object overwritten between reads: .changed, every byte delivered from the first version")
    func overwritten() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let first = StoreFixture.bytes(600_000, seed: 74)
        try await put(fixture, "changing.bin", first)
        let stream = Handoff(BlobInputStream(dataSource: try source(fixture, "changing.bin")()))
        let head = try await offThePool {
            let stream = stream.value
            stream.open()
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let n = stream.read(&buffer, maxLength: buffer.count)
            return Data(buffer[0..<max(n, 0)])
        }
        #expect(head.count > 0)
        // The same length, other bytes: only the ETag tells the versions apart.
        try await put(fixture, "changing.bin", StoreFixture.bytes(600_000, seed: 75))
        let (rest, last, error) = try await offThePool {
            let (rest, last) = stream.value.readToEnd(chunkSize: 65_536)
            stream.value.close()
            return (rest, last, stream.value.dataSource.error as? BlobStreamError)
        }
        let got = head + rest
        #expect(last == -1)
        #expect(error?.code == .changed, "\(String(describing: error))")
        #expect(error?.message.contains("s3://\(fixture.bucket)/changing.bin") == true)
        #expect(got.count < first.count)
        #expect(got == first.prefix(got.count), "every byte delivered is from the first version")
    }

    @Test("a connection dropped by the fault proxy mid-object: that range asked again at its offset, the read whole")
    func droppedConnection() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(500_000, seed: 76)
        try await put(fixture, "dropped.bin", data)
        let proxy = try await FaultProxy.start(upstream: fixture.store.endpoint)
        defer { proxy.stop() }
        try await proxy.setRules([.drop(method: "GET", path: "dropped.bin", nth: 3)])
        var configuration = fixture.client.configuration
        configuration.endpoint = URL(string: proxy.endpoint)!
        let read = try await readAll(source(fixture, "dropped.bin", configuration: configuration, hedged: false))
        #expect(read.error == nil, "\(String(describing: read.error))")
        #expect(read.last == 0)
        #expect(sha256Hex(read.data) == sha256Hex(data))
        let gets = await proxy.settledLog().filter { $0.method == "GET" }
        let dropped = try #require(gets.first { $0.action == "drop" })
        let again = gets.filter { $0.headers["range"] == dropped.headers["range"] && $0.action == "forward" }
        #expect(again.count == 1 && again.first?.headers["if-match"] != nil, "\(gets)")
        #expect(gets.allSatisfy { $0.headers["authorization"]?.contains("SignedHeaders=") == true })
        #expect(gets.allSatisfy { $0.headers["authorization"]?.contains("range") == true })
    }
}
