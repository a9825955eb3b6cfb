import BlobStream
import BlobStreamCompression
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamSources
import BlobStreamTestSupport
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// What a remote read asks of the store, request by request, through the logging proxy in
/// front of it: how many requests (a hedge, the same GET again while the first is silent on a
/// loaded machine, counted apart) and how many bytes of answers were relayed. The reads of the issue "Remote I/O at the floor", on a tar.gz of a
/// few thousand small members made here (its member index several pages), a zip of the same
/// members with no index, and a gzip object with its `.gzidx`: a small member cold, the same
/// with the index cached, a zip member, an offset and a length of a .gz.
@Suite("Remote reads: requests and bytes as planned", .serialized)
struct RequestPlanTests {
    /// The requests of one read and the bytes relayed to answer them.
    struct Count: CustomStringConvertible {
        var log: [FaultProxy.Seen]
        /// The requests planned, in order: each distinct method, target and range once.
        var planned: [String] {
            var seen = Set<String>()
            return log.map { "\($0.method) \($0.target) \($0.headers["range"] ?? "-")" }.filter {
                seen.insert($0).inserted
            }
        }
        var requests: Int { planned.count }
        /// The hedges: requests sent again.
        var hedges: Int { log.count - requests }
        var bytes: Int { log.reduce(0) { $0 + $1.answerBytes } }
        var lines: [String] {
            log.map {
                "\($0.method) \($0.target) \($0.headers["range"] ?? "-") \($0.status.map(String.init) ?? "-") \($0.answerBytes)"
            }
        }
        var description: String { "\(requests) requests (\(hedges) hedges beside), \(bytes) bytes: \(lines)" }
    }

    /// The members of the archives: `count` small text files of 100 to 900 bytes each, of
    /// words drawn by a seeded generator (deterministic), under `m/`.
    static func members(_ count: Int) -> [(name: String, data: Data)] {
        let words = ["north ", "south ", "east ", "west\n", "up ", "down ", "left\n", "right ", "kappa ", "sigma "]
        var generator = SeededBytes(seed: 2026)
        return (0..<count).map { i in
            let size = 100 + Int(generator.next() % 800)
            var text = "member \(i)\n"
            while text.utf8.count < size {
                let word = words[Int(generator.next() % UInt64(words.count))]
                text += generator.next() % 7 == 0 ? "\(generator.next() % 100_000) " : word
            }
            return (String(format: "m/%05d.txt", i), Data(text.utf8))
        }
    }

    /// The folder of `members` written out, and a tar.gz and a zip of it made by tar and
    /// Python's zipfile.
    static func archives(_ members: [(name: String, data: Data)], in folder: URL) throws -> (tgz: Data, zip: Data) {
        let root = folder.appendingPathComponent("tree")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("m"), withIntermediateDirectories: true)
        for (name, data) in members { try data.write(to: root.appendingPathComponent(name)) }
        let tgz = folder.appendingPathComponent("many.tar.gz")
        try S3ArchiveIndexTests.run("/bin/tar", ["-C", root.path, "-czf", tgz.path, "m"])
        let zip = folder.appendingPathComponent("many.zip")
        let script = """
            import os, sys, zipfile
            root, out = sys.argv[1], sys.argv[2]
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                for n in sorted(os.listdir(os.path.join(root, "m"))):
                    z.write(os.path.join(root, "m", n), "m/" + n)
            """
        try S3ArchiveIndexTests.run("/usr/bin/python3", ["-c", script, root.path, zip.path])
        return (try Data(contentsOf: tgz), try Data(contentsOf: zip))
    }

    /// Reads `url` (at `offset`, `length` bytes, nil: to its end) through a fresh composition
    /// root (nothing remembered in the process from a read before) and counts its requests.
    static func measure(
        _ proxy: FaultProxy, _ fixture: StoreFixture, _ url: String, offset: Int64 = 0, length: Int? = nil,
        cache: IndexCache? = nil, expected: Data
    ) async throws -> (count: Count, seconds: Double) {
        _ = await proxy.settledLog()
        try await proxy.clearLog()
        let pool = HTTPClientPool(connection: HTTPConnectionOptions())
        let configuration = fixture.client.configuration
        let sources = BlobSources(remote: StoreSchemes(pool: pool) { configuration }, indexCache: cache)
        let clock = ContinuousClock()
        let start = clock.now
        let got = try await CompositionRootTests.read(
            url, registry: sources.makeRegistry(), offset: offset, length: length)
        let elapsed = clock.now - start
        try await pool.shutdown()
        // A request sent as the stream closed reaches the proxy a moment later: it is this read's.
        try await Task.sleep(for: .milliseconds(300))
        #expect(got == expected, "\(url): the bytes")
        let count = Count(log: await proxy.settledLog())
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(
            "RequestPlan \(url) offset \(offset) length \(length.map(String.init) ?? "-")\(cache == nil ? "" : " cache"): \(String(format: "%.3f", seconds)) s, \(count)"
        )
        return (count, seconds)
    }

    /// The store behind the logging proxy, with a tar.gz of 12,000 small members indexed
    /// beside it (`blobstream index s3://…`, its KEY.blobidx several 32 KiB pages), the zip
    /// of the same members with no index, and a gzip object with its KEY.gzidx.
    struct Scene {
        let proxy: FaultProxy
        let fixture: StoreFixture
        let members: [(name: String, data: Data)]
        let text: Data

        static func make() async throws -> Scene {
            let (proxy, fixture, environment) = try await CompositionRootTests.proxiedStore()
            let members = RequestPlanTests.members(12_000)
            let (tgz, zip) = try RequestPlanTests.archives(members, in: fixture.folder)
            _ = try await fixture.client.putObject(fixture.location("many.tar.gz"), body: ByteBuffer(bytes: tgz))
            _ = try await fixture.client.putObject(fixture.location("many.zip"), body: ByteBuffer(bytes: zip))
            let (gz, text) = try S3GzipIndexTests.gzipObject(16_000_000, seed: 41)
            _ = try await fixture.client.putObject(fixture.location("t.gz"), body: ByteBuffer(bytes: gz))
            for (key, spacing) in [("many.tar.gz", "262144"), ("t.gz", "1048576")] {
                let built = try await S3ReadToolTests.run(
                    ["index", "--spacing", spacing, "s3://\(fixture.bucket)/\(key)"], environment: environment)
                try #require(built.status == 0, "\(built.stderr)")
            }
            let index = try await fixture.stored("many.tar.gz.blobidx")
            print(
                "RequestPlan scene: many.tar.gz \(tgz.count) bytes, its .blobidx \(index.count), many.zip \(zip.count), t.gz \(gz.count)"
            )
            return Scene(proxy: proxy, fixture: fixture, members: members, text: text)
        }
    }

    @Test(
        "a small member of a tar.gz through its index beside it, cold and cached; a zip member with no index; an offset and length of a .gz through its .gzidx"
    )
    func plans() async throws {
        let scene = try await Scene.make()
        defer { scene.proxy.stop() }
        defer { scene.fixture.cleanUp() }
        let (proxy, fixture, bucket) = (scene.proxy, scene.fixture, scene.fixture.bucket)
        let member = scene.members[8_345]
        let memberURL = "archive:s3://\(bucket)/many.tar.gz!/\(member.name)"

        // Cold: the archive's identity, the index (one request: it fits in the first answer,
        // so its end is not asked for beside it), the member's span; no speculative
        // `bytes=0-` of the archive.
        let cold = try await Self.measure(proxy, fixture, memberURL, expected: member.data)
        #expect(cold.count.requests <= 3, "cold: \(cold.count)")
        #expect(cold.count.planned.filter { $0.contains(".blobidx") }.count == 1, "cold: \(cold.count)")
        // The index's first GET asks for its head alone (2 MiB), not for all of it from there.
        #expect(cold.count.lines.contains { $0.contains(".blobidx bytes=0-2097151 ") }, "cold: \(cold.count)")
        // The archive's first GET asks for its first 64 KiB alone (its identity), not for the
        // archive from its start.
        #expect(cold.count.lines.contains { $0.contains("many.tar.gz bytes=0-65535 ") }, "cold: \(cold.count)")
        #expect(!cold.count.lines.contains { $0.contains(" bytes=0- ") }, "cold: \(cold.count)")
        #expect(cold.count.bytes <= 2_400_000, "cold: \(cold.count)")
        withKnownIssue("Remote I/O at the floor: the index read whole, not the page that holds the member") {
            #expect(cold.count.bytes <= 800_000, "cold: \(cold.count)")
        }

        // With the index cache: filled by the first read (the index read once), then the
        // member's span alone.
        let cache = IndexCache(folder: fixture.folder.appendingPathComponent("cache").path)
        let fill = try await Self.measure(proxy, fixture, memberURL, cache: cache, expected: member.data)
        #expect(fill.count.requests <= 3, "filling the cache: \(fill.count)")
        // The index read once, whole, in one request (it was asked for three times: its
        // head, its tail, then whole again to be kept).
        #expect(fill.count.planned.filter { $0.contains(".blobidx") }.count == 1, "filling the cache: \(fill.count)")
        let cached = try await Self.measure(proxy, fixture, memberURL, cache: cache, expected: member.data)
        #expect(cached.count.requests <= 2, "cached: \(cached.count)")
        #expect(!cached.count.lines.contains { $0.contains(".blobidx") }, "cached: \(cached.count)")
        #expect(cached.count.bytes <= 600_000, "cached: \(cached.count)")
        withKnownIssue(
            "Remote I/O at the floor: the archive's first 64 KiB asked for its identity", isIntermittent: true
        ) {
            #expect(cached.count.requests == 1, "cached: \(cached.count)")
        }

        // A zip member with no index: the directory from one tail read, the member.
        let zipMember = scene.members[6_234]
        let zip = try await Self.measure(
            proxy, fixture, "archive:s3://\(bucket)/many.zip!/\(zipMember.name)", expected: zipMember.data)
        #expect(zip.count.requests <= 4, "zip: \(zip.count)")
        #expect(!zip.count.lines.contains { $0.contains(" bytes=0- ") }, "zip: \(zip.count)")
        #expect(zip.count.bytes <= 1_500_000, "zip: \(zip.count)")
        withKnownIssue("Remote I/O at the floor: index look-ups, bytes=0-, overlapping ranges", isIntermittent: true) {
            #expect(zip.count.requests <= 3, "zip: \(zip.count)")
        }

        // 1 MiB at 12 MB of a .gz through its .gzidx: no byte past the length's end asked for,
        // nothing sent as the stream closes.
        let gz = try await Self.measure(
            proxy, fixture, "gzip:s3://\(bucket)/t.gz", offset: 12_000_000, length: 1 << 20,
            expected: scene.text.subdata(in: 12_000_000..<(12_000_000 + (1 << 20))))
        #expect(gz.count.requests <= 4, "gz: \(gz.count)")
        #expect(gz.count.planned.filter { $0.contains(".gzidx") }.count == 1, "gz: \(gz.count)")
        #expect(!gz.count.lines.contains { $0.contains(" bytes=0- ") }, "gz: \(gz.count)")
        #expect(gz.count.bytes <= 1_400_000, "gz: \(gz.count)")
        #expect(gz.count.lines.contains { $0.contains("t.gz.gzidx bytes=0-524287 ") }, "gz: \(gz.count)")
        withKnownIssue(
            "Remote I/O at the floor: bytes=0- of the object and of its index, a block past the end",
            isIntermittent: true
        ) {
            #expect(gz.count.requests <= 3, "gz: \(gz.count)")
            #expect(!gz.count.lines.contains { $0.hasSuffix(" - 0") }, "gz: \(gz.count)")
        }

        // 20 ms before each request: the cold member's time.
        try await proxy.setRules([.delay(0.020, times: 0)])
        let slow = try await Self.measure(proxy, fixture, memberURL, expected: member.data)
        print("RequestPlan: cold member with 20 ms a request: \(String(format: "%.3f", slow.seconds)) s")
        // The target, 4 x the delay + 80 ms, is printed; the bound is loose (a loaded machine).
        #expect(slow.seconds <= 1.0, "cold at 20 ms a request: \(slow.seconds) s, \(slow.count)")
        try await proxy.setRules([])
    }
}
