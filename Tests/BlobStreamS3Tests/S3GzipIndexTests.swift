import BlobStream
import BlobStreamGzip
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamTestSupport
import Foundation
import NIOCore
import Testing

/// Gzip seek-point indexes of objects on the store: built through the object's ranged
/// source, stored beside it as `KEY.gzidx`, found there and checked against the object's size
/// and strong ETag; a stale or wrong index never gives wrong bytes.
@Suite("Gzip indexes of objects on the store", .serialized)
struct S3GzipIndexTests {
    /// Small blocks: an index object is read by range, a few requests each.
    static let options = HTTPRangeOptions(blockSize: 64 << 10, connection: HTTPConnectionOptions())

    /// A gzip stream of `count` bytes of text-like data (compressible, so the points are
    /// apart), and the data.
    static func gzipObject(_ count: Int, seed: UInt64) throws -> (gz: Data, data: Data) {
        let words = ["alpha ", "beta ", "gamma ", "delta\n", "epsilon ", "zeta ", "eta\n", "theta "]
        var generator = SeededBytes(seed: seed)
        var data = Data(capacity: count)
        while data.count < count { data.append(contentsOf: words[Int(generator.next() % 8)].utf8) }
        data = data.prefix(count)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-c", "-6"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let bytes = data
        Thread {
            input.fileHandleForWriting.write(bytes)
            try? input.fileHandleForWriting.close()
        }.start()
        let gz = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (gz, data)
    }

    static func source(_ configuration: S3Configuration, _ url: String) throws -> HTTPRangeDataSource {
        try S3Sources.makeSource(url: url, configuration: configuration, options: Self.options)
    }

    /// Builds the index of `key` through its source, with the object's identity.
    func buildIndex(_ fixture: StoreFixture, _ key: String, spacing: Int) async throws -> GzipIndex {
        let (configuration, url) = (fixture.client.configuration, "s3://\(fixture.bucket)/\(key)")
        return try await offThePool { () throws -> GzipIndex in
            let object = try Self.source(configuration, url)
            object.open()
            let identity = try object.contentIdentity()
            var index = try GzipIndex.build(from: object, spacing: spacing, name: url)
            index.identity = identity
            return index
        }
    }

    /// `length` bytes at `offset` read through the index `lookUp` finds (beside the object, or
    /// `named`), on a thread of its own: what it found, the bytes (nil when the read failed)
    /// and the error.
    func readThrough(_ fixture: StoreFixture, _ key: String, named: String? = nil, offset: Int64, length: Int)
        async throws -> (found: String, data: Data?, error: BlobStreamError?)
    {
        let (configuration, url) = (fixture.client.configuration, "s3://\(fixture.bucket)/\(key)")
        return try await offThePool { () throws -> (found: String, data: Data?, error: BlobStreamError?) in
            let object = try Self.source(configuration, url)
            object.open()
            let found: GzipIndex.LookUp
            do {
                found = try GzipIndex.lookUp(for: object, at: url, indexURL: named) {
                    try Self.source(configuration, $0)
                }
            } catch {
                object.close()
                return ("thrown", nil, error as? BlobStreamError)
            }
            guard case .matching(let index) = found else {
                object.close()
                return ("\(found)", nil, nil)
            }
            let gzip = GzipDataSource(upstream: object, name: url, index: index)
            let slice = BlobSliceDataSource(upstream: gzip, offset: offset, length: Int64(length))
            let stream = BlobInputStream(dataSource: slice)
            stream.open()
            defer { stream.close() }
            let (data, last) = stream.readToEnd(chunkSize: 100_000)
            let error = (slice.error ?? gzip.error) as? BlobStreamError
            return ("matching", last == 0 ? data : nil, error)
        }
    }

    @Test("an index stored beside the object is found and read by range: the bytes at far offsets are right")
    func besideTheObject() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (gz, data) = try Self.gzipObject(6_000_000, seed: 5)
        _ = try await fixture.client.putObject(fixture.location("t.gz"), body: ByteBuffer(bytes: gz))
        let index = try await buildIndex(fixture, "t.gz", spacing: 256 << 10)
        #expect(index.points.count > 10)
        #expect(index.identity?.entityTag != nil && index.identity?.size == Int64(gz.count))
        // The identity with its ETag survives the GZIDX record (version 2).
        let bytes = index.serialized()
        let parsed = try GzipIndex(serialized: bytes, name: "t.gz.gzidx")
        #expect(parsed.identity == index.identity)
        _ = try await fixture.client.putObject(fixture.location("t.gz.gzidx"), body: ByteBuffer(bytes: bytes))
        for offset: Int64 in [0, 1_234_567, 4_500_000, 5_999_000] {
            let end = min(Int(offset) + 200_000, data.count)
            let got = try await readThrough(fixture, "t.gz", offset: offset, length: end - Int(offset))
            #expect(got.found == "matching", "offset \(offset): \(got.found) \(String(describing: got.error))")
            #expect(
                got.data == data.subdata(in: Int(offset)..<end), "offset \(offset): \(String(describing: got.error))")
        }
        // No index beside another object: absent, and nothing is used.
        _ = try await fixture.client.putObject(fixture.location("other.gz"), body: ByteBuffer(bytes: gz))
        let absent = try await readThrough(fixture, "other.gz", offset: 0, length: 10)
        #expect(absent.found == "absent")
    }

    @Test("an object replaced after its index was made: the sidecar is not used, a named one is refused by name")
    func stale() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (gz, _) = try Self.gzipObject(2_000_000, seed: 6)
        _ = try await fixture.client.putObject(fixture.location("s.gz"), body: ByteBuffer(bytes: gz))
        let index = try await buildIndex(fixture, "s.gz", spacing: 256 << 10)
        _ = try await fixture.client.putObject(
            fixture.location("s.gz.gzidx"), body: ByteBuffer(bytes: index.serialized()))
        // The same size, one byte changed: only the ETag tells.
        var other = gz
        other[other.count / 2] ^= 0xFF
        _ = try await fixture.client.putObject(fixture.location("s.gz"), body: ByteBuffer(bytes: other))
        let implicit = try await readThrough(fixture, "s.gz", offset: 1_000_000, length: 1000)
        #expect(implicit.found.hasPrefix("unusable"), "\(implicit.found)")
        #expect(implicit.found.contains("ETag"), "\(implicit.found)")
        let sidecar = "s3://\(fixture.bucket)/s.gz.gzidx"
        let named = try await readThrough(fixture, "s.gz", named: sidecar, offset: 1_000_000, length: 1000)
        #expect(named.found == "thrown")
        #expect(named.error?.code == .changed)
        #expect(named.error?.message.contains(sidecar) == true, "\(String(describing: named.error))")
        #expect(named.error?.message.contains("s3://\(fixture.bucket)/s.gz") == true)
    }

    @Test("a wrong index (a seek point moved) fails the read, never wrong bytes; a cut index object is refused")
    func wrongIndex() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (gz, data) = try Self.gzipObject(3_000_000, seed: 8)
        _ = try await fixture.client.putObject(fixture.location("w.gz"), body: ByteBuffer(bytes: gz))
        var index = try await buildIndex(fixture, "w.gz", spacing: 256 << 10)
        let k = index.points.count / 2
        index.points[k].compressedOffset += 1
        _ = try await fixture.client.putObject(
            fixture.location("w.gz.gzidx"), body: ByteBuffer(bytes: index.serialized()))
        let offset = index.points[k].uncompressedOffset + 10
        let got = try await readThrough(fixture, "w.gz", offset: offset, length: 50_000)
        #expect(got.found == "matching")
        if let bytes = got.data {
            #expect(bytes == data.subdata(in: Int(offset)..<Int(offset) + 50_000), "wrong bytes delivered")
        } else {
            #expect(got.error != nil)
        }
        // Cut: the object holds the first half of a good index.
        let good = try await buildIndex(fixture, "w.gz", spacing: 256 << 10).serialized()
        _ = try await fixture.client.putObject(
            fixture.location("cut.gzidx"), body: ByteBuffer(bytes: good.prefix(good.count / 2)))
        let cut = try await readThrough(
            fixture, "w.gz", named: "s3://\(fixture.bucket)/cut.gzidx", offset: 0, length: 10)
        #expect(cut.found == "thrown")
        #expect(cut.error?.code == .corrupt, "\(String(describing: cut.error))")
        #expect(cut.error?.message.contains("cut.gzidx") == true)
    }

    @Test("blobstream index s3://… writes KEY.gzidx beside it; cat --offset reads through it; --output writes a path")
    func tool() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (gz, data) = try Self.gzipObject(5_000_000, seed: 9)
        _ = try await fixture.client.putObject(fixture.location("big.gz"), body: ByteBuffer(bytes: gz))
        let environment = S3ReadToolTests.environment(fixture)
        let url = "s3://\(fixture.bucket)/big.gz"
        let index = try await S3ReadToolTests.run(["index", "--spacing", "262144", url], environment: environment)
        #expect(index.status == 0, "\(index.stderr)")
        #expect(String(decoding: index.stdout, as: UTF8.self).hasPrefix(url + ".gzidx\t"))
        let storedBytes = try await fixture.stored("big.gz.gzidx")
        let stored = try GzipIndex(serialized: [UInt8](storedBytes), name: "stored")
        #expect(stored.identity?.entityTag != nil && stored.points.count > 3)
        // GZIDX stays interoperable: the index built from the store, downloaded beside a copy
        // of the object, is read by indexed_gzip, which gives the same bytes.
        let gzPath = fixture.folder.appendingPathComponent("downloaded.gz").path
        let indexPath = fixture.folder.appendingPathComponent("downloaded.gz.gzidx").path
        try gz.write(to: URL(fileURLWithPath: gzPath))
        try storedBytes.write(to: URL(fileURLWithPath: indexPath))
        let ranges = [(0, 1000), (1_234_567, 200_000), (4_000_000, 500_000), (data.count - 1000, 1000)]
        let theirs = try Self.indexedGzipRead(gz: gzPath, index: indexPath, ranges: ranges)
        #expect(theirs == ranges.map { sha256Hex(data.subdata(in: $0.0..<$0.0 + $0.1)) })
        let cat = try await S3ReadToolTests.run(
            ["cat", "--offset", "4000000", "--length", "500000", "gzip:" + url], environment: environment)
        #expect(cat.status == 0, "\(cat.stderr)")
        #expect(cat.stdout == data.subdata(in: 4_000_000..<4_500_000))
        let local = fixture.folder.appendingPathComponent("local.gzidx").path
        let written = try await S3ReadToolTests.run(["index", "--output", local, url], environment: environment)
        #expect(written.status == 0, "\(written.stderr)")
        let named = try await S3ReadToolTests.run(
            ["cat", "--index", local, "--offset", "100", "--length", "1000", "gzip:" + url], environment: environment)
        #expect(named.status == 0 && named.stdout == data.subdata(in: 100..<1100), "\(named.stderr)")
        // An index cannot go to a web server: one line naming --output.
        let refused = try await S3ReadToolTests.run(
            ["index", "--output", "http://127.0.0.1:1/x.gzidx", url], environment: environment)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("--output"), "\(refused.stderr)")
    }
}

extension S3GzipIndexTests {
    /// What indexed_gzip (PyPI, in the virtual environment `scripts/indexed-gzip-venv` makes)
    /// reads of `gz` through the GZIDX file `index`: the sha256 of each (offset, count).
    static func indexedGzipRead(gz: String, index: String, ranges: [(Int, Int)]) throws -> [String] {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts")
        let python = try output(of: scripts.appendingPathComponent("indexed-gzip-venv").path, [])
        let read = try output(
            of: python.trimmingCharacters(in: .whitespacesAndNewlines),
            [scripts.appendingPathComponent("indexed-gzip-interop.py").path, "read", gz, index]
                + ranges.map { "\($0.0):\($0.1)" })
        return read.split(separator: "\n").map(String.init)
    }

    /// The standard output of a program that must succeed (its standard error in the failure).
    static func output(of executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let (out, err) = (Pipe(), Pipe())
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both to their end before waiting: a full pipe would stop the program.
        let errors = Locked(Data())
        let drained = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let bytes = err.fileHandleForReading.readDataToEndOfFile()
            errors.withLock { $0 = bytes }
            drained.signal()
        }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        drained.wait()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let stderr = errors.withLock { String(decoding: $0, as: UTF8.self) }
            throw BlobStreamError(.sourceFailed, "\(executable) \(arguments.joined(separator: " ")) failed: \(stderr)")
        }
        return String(decoding: stdout, as: UTF8.self)
    }
}

/// Deterministic pseudo-random numbers (SplitMix64).
struct SeededBytes {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
