import BlobStream
import BlobStreamArchive
import BlobStreamGzip
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamTestSupport
import Crypto
import Foundation
import NIOCore
import Testing

/// Member indexes of archives on the store: built through the object's ranged source, stored
/// beside it as `KEY.blobidx` (version 3: the object's size and strong ETag, read by range),
/// found there by `archive:` sources and checked against the object; a stale index is not
/// used, and a wrong one fails the read, never giving wrong bytes.
@Suite("Archive member indexes of objects on the store", .serialized)
struct S3ArchiveIndexTests {
    enum Format: String, CaseIterable, Sendable {
        case tar
        case tarGzip = "tar.gz"
        /// zstd frames of 256 KiB of tar each, with their checksums (no seek table): a member
        /// is entered at the frame of its header, big.bin decoded in parallel.
        case tarZstd = "tar.zst"
        case zip
    }

    /// The files the archives hold: two members of the same size (`docs/a.bin`,
    /// `docs/b.bin`), small ones, and a large one spanning several seek points.
    static func files() -> [(name: String, data: Data)] {
        var files = [
            ("docs/a.bin", StoreFixture.bytes(100_000, seed: 11)),
            ("docs/b.bin", StoreFixture.bytes(100_000, seed: 12)),
            ("big.bin", StoreFixture.bytes(1_500_000, seed: 13) + Data(repeating: 0x41, count: 1_500_000)),
        ]
        for i in 0..<30 { files.append(("photos/p\(i).txt", Data(String(repeating: "photo \(i) ", count: 400).utf8))) }
        return files
    }

    /// The archive of `files()` in `format`, made in `folder` by tar, gzip, zstd and Python's zipfile
    /// (the two same-size members stored, the rest deflated).
    static func archive(_ format: Format, in folder: URL) throws -> Data {
        let root = folder.appendingPathComponent("tree-\(format.rawValue)")
        for (name, data) in files() {
            let url = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
        let out = folder.appendingPathComponent("archive.\(format.rawValue)")
        let names = ["docs", "big.bin", "photos"]
        switch format {
        case .tar: try run("/bin/tar", ["-C", root.path, "-cf", out.path] + names)
        case .tarGzip: try run("/bin/tar", ["-C", root.path, "-czf", out.path] + names)
        case .tarZstd:
            let tar = out.path + ".tar"
            try run("/bin/tar", ["-C", root.path, "-cf", tar] + names)
            try run(
                "/bin/sh",
                [
                    "-c",
                    "split -b 262144 \"$1\" \"$1.part.\" && for f in \"$1.part.\"*; do zstd -q -c --check \"$f\"; done > \"$2\" && rm -f \"$1\" \"$1.part.\"*",
                    "sh", tar, out.path,
                ])
        case .zip:
            let script = """
                import os, sys, zipfile
                root, out = sys.argv[1], sys.argv[2]
                with zipfile.ZipFile(out, "w") as z:
                    for folder, _, names in sorted(os.walk(root)):
                        for n in sorted(names):
                            path = os.path.join(folder, n)
                            name = os.path.relpath(path, root)
                            z.write(path, name, zipfile.ZIP_STORED if name.startswith("docs/") else zipfile.ZIP_DEFLATED)
                """
            try run("/usr/bin/python3", ["-c", script, root.path, out.path])
        }
        return try Data(contentsOf: out)
    }

    static func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BlobStreamError(.ioFailed, "\(tool) \(arguments) exited with \(process.terminationStatus)")
        }
    }

    /// A registry that reads `s3:` objects of the store and `archive:` URLs over them, looking
    /// for index objects (read with small blocks) beside the archives.
    static func registry(_ configuration: S3Configuration, cache: IndexCache? = nil) -> DataSourceRegistry {
        let registry = DataSourceRegistry()
        S3Sources.register(in: registry, configuration: configuration)
        let indexObjects = DataSourceRegistry()
        S3Sources.register(
            in: indexObjects, configuration: configuration,
            options: HTTPRangeOptions(blockSize: 64 << 10, connection: HTTPConnectionOptions()))
        ArchiveSources.register(in: registry, indexObjects: indexObjects, indexCache: cache)
        return registry
    }

    /// Builds the member index of `key` through its source.
    static func buildIndex(_ fixture: StoreFixture, _ key: String) async throws -> ArchiveIndex {
        let (configuration, url) = (fixture.client.configuration, "s3://\(fixture.bucket)/\(key)")
        return try await offThePool { () throws -> ArchiveIndex in
            try ArchiveIndex.build(
                archiveNamed: url, makeSource: { try S3Sources.makeSource(url: url, configuration: configuration) },
                gzipSpacing: 256 << 10)
        }
    }

    /// Reads `member` of the archive `key` through `archive:` (its index beside it, when
    /// there and matching): the bytes (nil when the read failed) and the error.
    static func read(_ fixture: StoreFixture, _ key: String, _ member: String, cache: IndexCache? = nil) async throws
        -> (data: Data?, error: BlobStreamError?)
    {
        let configuration = fixture.client.configuration
        let url = "archive:s3://\(fixture.bucket)/\(key)!/\(member)"
        return try await offThePool { () throws -> (data: Data?, error: BlobStreamError?) in
            let stream = try BlobInputStream(
                url: url, registry: Self.registry(configuration, cache: cache), mode: .synchronous)
            stream.open()
            defer { stream.close() }
            let (data, last) = stream.readToEnd(chunkSize: 100_000)
            return (last == 0 ? data : nil, stream.streamError as? BlobStreamError)
        }
    }

    @Test(
        "an index stored beside the archive is found and read by range: every member read through it is right",
        arguments: Format.allCases)
    func besideTheArchive(_ format: Format) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let key = "a.\(format.rawValue)"
        let archive = try Self.archive(format, in: fixture.folder)
        _ = try await fixture.client.putObject(fixture.location(key), body: ByteBuffer(bytes: archive))
        let index = try await Self.buildIndex(fixture, key)
        #expect(index.members.filter { $0.type == .file }.count == Self.files().count)
        #expect(index.identity.entityTag != nil && index.identity.size == Int64(archive.count))
        let encoded = index.encoded()
        // Version 3 (little-endian u16 after the 8-byte magic): the identity keeps its ETag.
        #expect(encoded[8] == 3 && encoded[9] == 0)
        let decoded = try ArchiveIndex(decoding: encoded, name: "\(key).blobidx")
        #expect(decoded.identity == index.identity && decoded.members == index.members)
        _ = try await fixture.client.putObject(fixture.location("\(key).blobidx"), body: ByteBuffer(bytes: encoded))
        for (name, data) in Self.files() where ["docs/b.bin", "big.bin", "photos/p29.txt"].contains(name) {
            let got = try await Self.read(fixture, key, name)
            #expect(got.data == data, "\(name): \(String(describing: got.error))")
        }
    }

    @Test(
        "an index whose member points at another member's bytes: the read fails on the member's header, never gives them",
        arguments: Format.allCases)
    func wrongIndex(_ format: Format) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let key = "w.\(format.rawValue)"
        let archive = try Self.archive(format, in: fixture.folder)
        _ = try await fixture.client.putObject(fixture.location(key), body: ByteBuffer(bytes: archive))
        var index = try await Self.buildIndex(fixture, key)
        // docs/a.bin's record moved onto docs/b.bin's bytes (the same size): an index that
        // matches the object's ETag, and lies.
        let a = try #require(index.members.firstIndex { String(decoding: $0.nameBytes, as: UTF8.self) == "docs/a.bin" })
        let b = try #require(index.members.firstIndex { String(decoding: $0.nameBytes, as: UTF8.self) == "docs/b.bin" })
        index.members[a].headerOffset = index.members[b].headerOffset
        index.members[a].dataOffset = index.members[b].dataOffset
        index.members[a].seekPoint = index.members[b].seekPoint
        _ = try await fixture.client.putObject(
            fixture.location("\(key).blobidx"), body: ByteBuffer(bytes: index.encoded()))
        let got = try await Self.read(fixture, key, "docs/a.bin")
        #expect(got.data == nil, "docs/a.bin gave \(got.data?.count ?? 0) bytes through a wrong index")
        // The stream reports the source's failure (`.sourceFailed`), its cause the member's:
        // `.corrupt`, the archive's own header of the member (at the index's header offset)
        // naming docs/b.bin, before a byte is served.
        let cause = (got.error?.cause as? BlobStreamError) ?? got.error
        #expect(cause?.code == .corrupt, "\(String(describing: got.error))")
        #expect(
            got.error?.message.contains("index disagrees with the archive") == true, "\(String(describing: got.error))")
    }

    @Test("an archive replaced after its index was made: the index is not used (right bytes), a named one is refused")
    func stale() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let archive = try Self.archive(.tar, in: fixture.folder)
        _ = try await fixture.client.putObject(fixture.location("s.tar"), body: ByteBuffer(bytes: archive))
        let index = try await Self.buildIndex(fixture, "s.tar")
        _ = try await fixture.client.putObject(
            fixture.location("s.tar.blobidx"), body: ByteBuffer(bytes: index.encoded()))
        // The same size, docs/a.bin's and docs/b.bin's bytes swapped: only the ETag tells, and
        // the stale index would give b's bytes for a.
        let files = Self.files()
        let (aData, bData) = (files[0].data, files[1].data)
        var swapped = archive
        let aAt = try #require(archive.range(of: aData))
        let bAt = try #require(archive.range(of: bData))
        swapped.replaceSubrange(aAt, with: bData)
        swapped.replaceSubrange(bAt, with: aData)
        _ = try await fixture.client.putObject(fixture.location("s.tar"), body: ByteBuffer(bytes: swapped))
        let got = try await Self.read(fixture, "s.tar", "docs/a.bin")
        #expect(got.data == bData, "\(String(describing: got.error))")
        // The same index named: refused, naming the ETags.
        let configuration = fixture.client.configuration
        let url = "s3://\(fixture.bucket)/s.tar"
        let refusal = try await offThePool { () throws -> String in
            let object = try S3Sources.makeSource(url: url, configuration: configuration)
            object.open()
            defer { object.close() }
            do {
                _ = try ArchiveIndex.lookUp(for: object, at: url, indexURL: url + ".blobidx") {
                    try S3Sources.makeSource(url: $0, configuration: configuration)
                }
                return "used"
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal.contains("does not match") && refusal.contains("ETag"), "\(refusal)")
    }

    @Test(
        "blobstream index s3://… writes KEY.blobidx (and a tar.gz's KEY.gzidx) beside it; cat reads members through it",
        arguments: Format.allCases)
    func tool(_ format: Format) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let key = "t.\(format.rawValue)"
        let archive = try Self.archive(format, in: fixture.folder)
        _ = try await fixture.client.putObject(fixture.location(key), body: ByteBuffer(bytes: archive))
        let environment = S3ReadToolTests.environment(fixture)
        let url = "s3://\(fixture.bucket)/\(key)"
        let index = try await S3ReadToolTests.run(["index", "--spacing", "262144", url], environment: environment)
        #expect(index.status == 0, "\(index.stderr)")
        let lines = String(decoding: index.stdout, as: UTF8.self).split(separator: "\n")
        #expect(lines.first?.hasPrefix(url + ".blobidx\t") == true, "\(lines)")
        #expect(lines.count == (format == .tarGzip ? 2 : 1), "\(lines)")
        let stored = try ArchiveIndex(decoding: try await fixture.stored("\(key).blobidx"), name: "stored")
        #expect(stored.identity.size == Int64(archive.count) && stored.identity.entityTag != nil)
        if format == .tarGzip {
            let gzip = try GzipIndex(serialized: [UInt8](try await fixture.stored("\(key).gzidx")), name: "stored")
            #expect(gzip.identity?.entityTag == stored.identity.entityTag)
        }
        for (name, data) in Self.files() where ["docs/a.bin", "photos/p7.txt"].contains(name) {
            let cat = try await S3ReadToolTests.run(["cat", "archive:\(url)!/\(name)"], environment: environment)
            #expect(cat.status == 0 && cat.stdout == data, "\(name): \(cat.stderr)")
        }
        // ls lists the members (from the index beside the archive).
        let listed = try await S3ReadToolTests.run(["ls", url], environment: environment)
        let paths = String(decoding: listed.stdout, as: UTF8.self).split(separator: "\n").dropFirst()
            .map { String($0.split(separator: "\t")[0]) }
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(Set(Self.files().map(\.name)).isSubset(of: Set(paths)), "\(paths)")
    }

    @Test(
        "blobstream index s3://… of a tar.gz whose gzip header is longer than the 64 KiB it first reads: a member index"
    )
    func longGzipHeader() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let plain = try Self.archive(.tarGzip, in: fixture.folder)
        try #require(plain[3] == 0, "tar -z wrote header fields; the test splices an extra field into a bare header")
        // FEXTRA (one 65,000-byte subfield) and FNAME (10,000 bytes) before the deflate data.
        let extra = Data("BS".utf8) + Data([0xE8, 0xFD]) + Data(repeating: 0x20, count: 65_000)
        let name = Data(repeating: 0x6E, count: 10_000) + Data([0])
        var archive = plain.prefix(10)
        archive[3] = 0x04 | 0x08
        archive += Data([UInt8(extra.count & 0xFF), UInt8(extra.count >> 8)]) + extra + name + plain.dropFirst(10)
        let key = "long-header.tar.gz"
        _ = try await fixture.client.putObject(fixture.location(key), body: ByteBuffer(bytes: archive))
        let environment = S3ReadToolTests.environment(fixture)
        let url = "s3://\(fixture.bucket)/\(key)"
        let index = try await S3ReadToolTests.run(["index", url], environment: environment)
        #expect(index.status == 0, "\(index.stderr)")
        let lines = String(decoding: index.stdout, as: UTF8.self).split(separator: "\n")
        #expect(lines.first?.hasPrefix(url + ".blobidx\t") == true, "\(lines)")
        let member = Self.files().first { $0.name == "photos/p7.txt" }!
        let cat = try await S3ReadToolTests.run(["cat", "archive:\(url)!/\(member.name)"], environment: environment)
        #expect(cat.status == 0 && cat.stdout == member.data, "\(cat.stderr)")
    }

    @Test(
        "--index names a member index for an archive on the store: one on the store, a local copy; another archive's is refused",
        arguments: Format.allCases)
    func namedIndex(_ format: Format) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let archive = try Self.archive(format, in: fixture.folder)
        // The archive under a key with no index beside it; its index built from another key's copy.
        for key in ["named.\(format.rawValue)", "bare.\(format.rawValue)"] {
            _ = try await fixture.client.putObject(fixture.location(key), body: ByteBuffer(bytes: archive))
        }
        let environment = S3ReadToolTests.environment(fixture)
        let indexed = "s3://\(fixture.bucket)/named.\(format.rawValue)"
        let bare = "s3://\(fixture.bucket)/bare.\(format.rawValue)"
        let built = try await S3ReadToolTests.run(["index", indexed], environment: environment)
        try #require(built.status == 0, "\(built.stderr)")
        let local = fixture.folder.appendingPathComponent("copy.blobidx").path
        try await fixture.stored("named.\(format.rawValue).blobidx").write(to: URL(fileURLWithPath: local))
        let (name, data) = try #require(Self.files().first { $0.name == "photos/p7.txt" })
        for index in [indexed + ".blobidx", local] {
            let cat = try await S3ReadToolTests.run(
                ["cat", "--verbose", "--index", index, "archive:\(bare)!/\(name)"], environment: environment)
            #expect(cat.status == 0 && cat.stdout == data, "\(index): \(cat.stderr)")
            #expect(cat.stderr.contains("found through its member index"), "\(index): \(cat.stderr)")
        }
        // Another archive (same size, one byte other, so another ETag): the index is refused,
        // naming the ETags.
        let other = "s3://\(fixture.bucket)/other.\(format.rawValue)"
        var changed = archive
        changed[changed.count / 2] ^= 0xFF
        _ = try await fixture.client.putObject(
            fixture.location("other.\(format.rawValue)"), body: ByteBuffer(bytes: changed))
        let refused = try await S3ReadToolTests.run(
            ["cat", "--index", local, "archive:\(other)!/\(name)"], environment: environment)
        #expect(refused.status != 0 && refused.stdout.isEmpty, "\(refused.stderr)")
        #expect(refused.stderr.contains("does not match") && refused.stderr.contains("ETag"), "\(refused.stderr)")
        // An index that is not there: an error naming it.
        let missing = try await S3ReadToolTests.run(
            ["cat", "--index", indexed + ".nothing", "archive:\(bare)!/\(name)"], environment: environment)
        #expect(missing.status != 0 && missing.stderr.contains(indexed + ".nothing"), "\(missing.stderr)")
    }

    @Test(
        "with a cache: the index found beside the archive is kept, then used with no request for it; a new version is not"
    )
    func cache() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let archive = try Self.archive(.tar, in: fixture.folder)
        _ = try await fixture.client.putObject(fixture.location("c.tar"), body: ByteBuffer(bytes: archive))
        var index = try await Self.buildIndex(fixture, "c.tar")
        _ = try await fixture.client.putObject(
            fixture.location("c.tar.blobidx"), body: ByteBuffer(bytes: index.encoded()))
        let cache = IndexCache(folder: fixture.folder.appendingPathComponent("cache").path)
        let files = Self.files()
        let first = try await Self.read(fixture, "c.tar", "docs/a.bin", cache: cache)
        #expect(first.data == files[0].data, "\(String(describing: first.error))")
        let url = "s3://\(fixture.bucket)/c.tar"
        // Kept under the object's URL and the store it was read from.
        let origin = try S3Sources.makeSource(url: url, configuration: fixture.client.configuration).serverOrigin
        let kept = try #require(
            cache.existingPath(forSourceAt: url, serverOrigin: origin, identity: index.identity, kind: .archive))
        #expect(try Data(contentsOf: URL(fileURLWithPath: kept)) == index.encoded())
        // The index object gone from the store, the kept copy made to lie (docs/a.bin onto
        // docs/b.bin's bytes): the read fails on the CRC-32, so it went through the copy.
        try await fixture.store.swiftAPI.delete(fixture.bucket, "c.tar.blobidx")
        let a = try #require(index.members.firstIndex { String(decoding: $0.nameBytes, as: UTF8.self) == "docs/a.bin" })
        let b = try #require(index.members.firstIndex { String(decoding: $0.nameBytes, as: UTF8.self) == "docs/b.bin" })
        index.members[a].headerOffset = index.members[b].headerOffset
        index.members[a].dataOffset = index.members[b].dataOffset
        try index.encoded().write(to: URL(fileURLWithPath: kept))
        let lied = try await Self.read(fixture, "c.tar", "docs/a.bin", cache: cache)
        #expect(lied.data == nil && lied.error != nil, "a lying kept index gave \(lied.data?.count ?? 0) bytes")
        // A new version of the archive (another ETag): the kept copy is for the old one and is
        // not used; the member is found by walking the headers.
        var changed = archive
        changed.append(Data(count: 10240))
        _ = try await fixture.client.putObject(fixture.location("c.tar"), body: ByteBuffer(bytes: changed))
        let fresh = try await Self.read(fixture, "c.tar", "docs/a.bin", cache: cache)
        #expect(fresh.data == files[0].data, "\(String(describing: fresh.error))")
    }

    @Test(
        "blobstream index --index-cache keeps the index in the cache folder, not on the store; cat --index-cache reads through it"
    )
    func toolCache() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let archive = try Self.archive(.zip, in: fixture.folder)
        _ = try await fixture.client.putObject(fixture.location("k.zip"), body: ByteBuffer(bytes: archive))
        var environment = S3ReadToolTests.environment(fixture)
        // The XDG default under the test's own HOME-like folder.
        environment["XDG_CACHE_HOME"] = fixture.folder.appendingPathComponent("xdg").path
        let url = "s3://\(fixture.bucket)/k.zip"
        let index = try await S3ReadToolTests.run(["index", "--index-cache", url], environment: environment)
        #expect(index.status == 0, "\(index.stderr)")
        let folder = fixture.folder.appendingPathComponent("xdg/blobstream/indexes").path
        let line = String(decoding: index.stdout, as: UTF8.self)
        #expect(line.hasPrefix(folder + "/") && line.contains(".blobidx\t"), "\(line)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).count == 1)
        // Nothing was written beside the object.
        await #expect(throws: (any Error).self) { _ = try await fixture.stored("k.zip.blobidx") }
        let cat = try await S3ReadToolTests.run(
            ["cat", "--index-cache", "archive:\(url)!/docs/b.bin"], environment: environment)
        #expect(cat.status == 0 && cat.stdout == Self.files()[1].data, "\(cat.stderr)")
        // The cache folder named by BLOBSTREAM_INDEX_CACHE; a size that does not parse is a usage error.
        environment["BLOBSTREAM_INDEX_CACHE"] = fixture.folder.appendingPathComponent("named").path
        let named = try await S3ReadToolTests.run(["index", "--index-cache", url], environment: environment)
        #expect(
            named.status == 0 && String(decoding: named.stdout, as: UTF8.self).contains("/named/"), "\(named.stderr)")
        environment["BLOBSTREAM_INDEX_CACHE_SIZE"] = "lots"
        let bad = try await S3ReadToolTests.run(["cat", "archive:\(url)!/docs/b.bin"], environment: environment)
        #expect(bad.status == 2 && bad.stderr.contains("BLOBSTREAM_INDEX_CACHE_SIZE"), "\(bad.stderr)")
        let both = try await S3ReadToolTests.run(
            ["index", "--index-cache", "--output", "x.blobidx", url], environment: environment)
        #expect(both.status == 2, "\(both.stderr)")
    }
}
