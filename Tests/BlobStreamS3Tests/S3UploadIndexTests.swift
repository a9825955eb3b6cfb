import BlobStream
import BlobStreamArchive
import BlobStreamCompression
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamSources
import BlobStreamUpload
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// `blobstream upload … --build-index`: the index built from the bytes as they go out, kept
/// beside the object once it is whole, the same index `index s3://…` builds; a killed upload
/// leaves none.
@Suite("upload --build-index: write once, read any member", .serialized)
struct S3UploadIndexTests {
    /// A tar.gz of a few members (random bytes: about 3 parts of 5 MiB), made by tar and gzip.
    static func tarGzip(in fixture: StoreFixture) async throws -> (path: String, members: [String: Data]) {
        let tree = fixture.folder.appendingPathComponent("tree")
        try FileManager.default.createDirectory(at: tree.appendingPathComponent("d"), withIntermediateDirectories: true)
        var members: [String: Data] = [:]
        for (i, size) in [6 << 20, 123, 5 << 20 | 77, 4_000].enumerated() {
            let name = "d/m\(i).bin"
            let data = StoreFixture.bytes(size, seed: UInt64(40 + i))
            try data.write(to: tree.appendingPathComponent(name))
            members[name] = data
        }
        let path = fixture.folder.appendingPathComponent("a.tar.gz").path
        let made = try await S3Tool.runShell(
            "cd '\(tree.path)' && tar cf - d | gzip -1 > '\(path)'", environment: ProcessInfo.processInfo.environment)
        try #require(made.status == 0, "\(made.stderr)")
        return (path, members)
    }

    @Test(
        "a tar.gz from a pipe and from a file: KEY.blobidx and KEY.gzidx beside it, equal to what index s3:// builds; members read through them",
        arguments: [true, false])
    func tarGzipIndexed(fromPipe: Bool) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, members) = try await Self.tarGzip(in: fixture)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        let key = "up/a.tar.gz"
        let upload = try await S3Tool.run(
            [
                "upload", fromPipe ? "-" : path, "--to", "s3://\(fixture.bucket)/\(key)", "--endpoint-url",
                fixture.store.endpoint, "--part-size", "5MiB", "--build-index",
            ], environment: environment, stdin: fromPipe ? bytes : nil)
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(try await fixture.stored(key) == bytes)
        let built = try ArchiveIndex(decoding: try await fixture.stored(key + ".blobidx"), name: "built")
        #expect(built.format == .tarGzip)
        let gzidx = try await fixture.stored(key + ".gzidx")
        #expect(!gzidx.isEmpty)

        // The second pass it replaces, on a copy: the same members and seek points.
        let copy = "up/copy.tar.gz"
        let plain = try await S3Tool.run(
            ["upload", path, "--to", "s3://\(fixture.bucket)/\(copy)", "--endpoint-url", fixture.store.endpoint],
            environment: environment)
        #expect(plain.status == 0, "\(plain.stderr)")
        let readEnvironment = S3ReadToolTests.environment(fixture)
        let indexed = try await S3ReadToolTests.run(
            ["index", "s3://\(fixture.bucket)/\(copy)"], environment: readEnvironment)
        #expect(indexed.status == 0, "\(indexed.stderr)")
        let reference = try ArchiveIndex(decoding: try await fixture.stored(copy + ".blobidx"), name: "reference")
        #expect(built.members.map(\.nameBytes) == reference.members.map(\.nameBytes))
        #expect(built.members.map(\.crc32) == reference.members.map(\.crc32))
        #expect(built.members.map(\.dataOffset) == reference.members.map(\.dataOffset))
        #expect(built.identity.size == Int64(bytes.count) && built.identity.entityTag != nil)

        // Another process reads members through the index beside the object.
        for (name, data) in members {
            let read = try await S3ReadToolTests.run(
                ["cat", "--verbose", "archive:s3://\(fixture.bucket)/\(key)!/\(name)"], environment: readEnvironment)
            #expect(read.status == 0 && read.stdout == data, "\(name): \(read.stderr)")
            #expect(!read.stderr.contains("not used"), "\(name): \(read.stderr)")
        }
    }

    @Test(
        "a seekable tar.zst from a pipe: KEY.blobidx beside it, equal to what index s3:// builds; members read through it"
    )
    func tarZstdIndexed() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (gz, members) = try await Self.tarGzip(in: fixture)
        let path = fixture.folder.appendingPathComponent("a.tar.zst").path
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        let made = try await S3Tool.run(
            ["compress", "--seekable", "--frame-size", "1MiB", "gzip:" + gz, "-o", path], environment: environment)
        try #require(made.status == 0, "\(made.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let key = "up/a.tar.zst"
        let upload = try await S3Tool.run(
            [
                "upload", "-", "--to", "s3://\(fixture.bucket)/\(key)", "--endpoint-url", fixture.store.endpoint,
                "--part-size", "5MiB", "--build-index",
            ], environment: environment, stdin: bytes)
        #expect(upload.status == 0, "\(upload.stderr)")
        let built = try ArchiveIndex(decoding: try await fixture.stored(key + ".blobidx"), name: "built")
        #expect(built.format == .tarZstd && built.identity.entityTag != nil)
        #expect((built.zstdFrames?.frames.count ?? 0) > 10)
        let copy = "up/copy.tar.zst"
        _ = try await S3Tool.run(
            ["upload", path, "--to", "s3://\(fixture.bucket)/\(copy)", "--endpoint-url", fixture.store.endpoint],
            environment: environment)
        let readEnvironment = S3ReadToolTests.environment(fixture)
        let indexed = try await S3ReadToolTests.run(
            ["index", "s3://\(fixture.bucket)/\(copy)"], environment: readEnvironment)
        #expect(indexed.status == 0, "\(indexed.stderr)")
        let reference = try ArchiveIndex(decoding: try await fixture.stored(copy + ".blobidx"), name: "reference")
        #expect(built.members == reference.members && built.zstdFrames == reference.zstdFrames)
        for (name, data) in members {
            let read = try await S3ReadToolTests.run(
                ["cat", "--verbose", "archive:s3://\(fixture.bucket)/\(key)!/\(name)"], environment: readEnvironment)
            #expect(read.status == 0 && read.stdout == data, "\(name): \(read.stderr)")
            #expect(read.stderr.contains("found through its member index"), "\(name): \(read.stderr)")
        }
    }

    @Test(
        "a zip from a pipe: KEY.blobidx beside it from its central directory, as index s3:// builds; members read through it"
    )
    func zipIndexed() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (_, members) = try await Self.tarGzip(in: fixture)
        let path = fixture.folder.appendingPathComponent("a.zip").path
        let made = try await S3Tool.runShell(
            "cd '\(fixture.folder.appendingPathComponent("tree").path)' && bsdtar --format zip -cf '\(path)' d",
            environment: ProcessInfo.processInfo.environment)
        try #require(made.status == 0, "\(made.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        let key = "up/a.zip"
        let upload = try await S3Tool.run(
            [
                "upload", "-", "--to", "s3://\(fixture.bucket)/\(key)", "--endpoint-url", fixture.store.endpoint,
                "--part-size", "5MiB", "--build-index",
            ], environment: environment, stdin: bytes)
        #expect(upload.status == 0 && !upload.stderr.contains("warning"), "\(upload.stderr)")
        let built = try ArchiveIndex(decoding: try await fixture.stored(key + ".blobidx"), name: "built")
        #expect(built.format == .zip && built.identity.entityTag != nil)
        let reference = try ArchiveIndex.build(archiveAt: path)
        #expect(built.members == reference.members)
        let readEnvironment = S3ReadToolTests.environment(fixture)
        for (name, data) in members {
            let read = try await S3ReadToolTests.run(
                ["cat", "--verbose", "archive:s3://\(fixture.bucket)/\(key)!/\(name)"], environment: readEnvironment)
            #expect(read.status == 0 && read.stdout == data, "\(name): \(read.stderr)")
            #expect(read.stderr.contains("found through its member index"), "\(name): \(read.stderr)")
        }
    }

    @Test("a gzip that holds no tar, from a file: KEY.gzidx beside it; reads at an offset through it")
    func gzipIndexed() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (plainPath, data) = try fixture.file("plain", count: 9 << 20, seed: 7)
        let path = plainPath + ".gz"
        let made = try await S3Tool.runShell(
            "gzip -1 -c '\(plainPath)' > '\(path)'", environment: ProcessInfo.processInfo.environment)
        try #require(made.status == 0)
        let key = "g/big.gz"
        let upload = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/\(key)", "--endpoint-url", fixture.store.endpoint,
                "--part-size", "5MiB", "--build-index",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        #expect(upload.status == 0, "\(upload.stderr)")
        let index = try GzipIndex(serialized: [UInt8](try await fixture.stored(key + ".gzidx")), name: "gzidx")
        #expect(index.identity?.entityTag != nil && index.uncompressedSize == Int64(data.count))
        let read = try await S3ReadToolTests.run(
            ["cat", "--offset", "8000000", "--length", "500000", "gzip:s3://\(fixture.bucket)/\(key)"],
            environment: S3ReadToolTests.environment(fixture))
        #expect(read.status == 0 && read.stdout == data.subdata(in: 8_000_000..<8_500_000), "\(read.stderr)")
    }

    @Test("bytes no builder takes: the upload succeeds, a warning says why, no index object")
    func notIndexable() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(1 << 20, seed: 3)
        let upload = try await S3Tool.run(
            [
                "upload", "-", "--to", "s3://\(fixture.bucket)/r.bin", "--endpoint-url", fixture.store.endpoint,
                "--build-index",
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder), stdin: data)
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(upload.stderr.contains("warning") && upload.stderr.contains("no index"), "\(upload.stderr)")
        #expect(try await fixture.stored("r.bin") == data)
        for sidecar in ["r.bin.blobidx", "r.bin.gzidx"] {
            await #expect(throws: (any Error).self) { try await fixture.stored(sidecar) }
        }
    }

    @Test("a process killed mid-upload with --build-index leaves no index object, and no object")
    func killed() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let proxy = try await FaultProxy.start(upstream: fixture.store.endpoint)
        defer { proxy.stop() }
        // Every part after the first is held 30 s at the proxy: the tool is still uploading
        // (however slow the machine) when the store shows the first part, and is killed then.
        try await proxy.setRules([.delay(30, method: "PUT", path: "partNumber=", nth: 2, times: 0)])
        let (path, _) = try await Self.tarGzip(in: fixture)
        let key = "k/a.tar.gz"
        let (process, _) = try S3Tool.start(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/\(key)", "--part-size", "5MiB", "--parallel", "1",
                "--build-index", "--endpoint-url", proxy.endpoint,
            ], environment: S3Tool.environment(fixture.store, home: fixture.folder))
        let location = fixture.location(key)
        var stored = 0
        _ = try await SwiftStoreTestServer.poll(upTo: .seconds(60)) {
            if let upload = try await fixture.client.listMultipartUploads(location).first {
                stored = try await fixture.client.listParts(location, uploadID: upload.uploadID).count
            }
            return stored > 0 || !process.isRunning
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try #require(stored > 0, "the tool finished before a part was seen")
        for object in [key, key + ".blobidx", key + ".gzidx"] {
            await #expect(throws: (any Error).self, "\(object)") { try await fixture.stored(object) }
        }
    }

    @Test("--index-output PATH writes the index there and nothing beside the object; usage errors exit 2")
    func indexOutput() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, members) = try await Self.tarGzip(in: fixture)
        let output = fixture.folder.appendingPathComponent("named.blobidx").path
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        let upload = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/n.tar.gz", "--endpoint-url", fixture.store.endpoint,
                "--build-index", "--index-output", output,
            ], environment: environment)
        #expect(upload.status == 0, "\(upload.stderr)")
        let index = try ArchiveIndex.read(from: output)
        #expect(index.members.filter { $0.type == .file }.count == members.count)
        await #expect(throws: (any Error).self) { try await fixture.stored("n.tar.gz.blobidx") }
        for arguments in [
            ["upload", path, "--to", "s3://\(fixture.bucket)/x", "--index-output", output],
            ["upload", "-", "--to", "s3://\(fixture.bucket)/x", "--build-index", "--resume"],
            ["upload", path, "--to", "http://127.0.0.1:1/x", "--build-index"],
        ] {
            let refused = try await S3Tool.run(arguments, environment: environment)
            #expect(refused.status == 2, "\(arguments): \(refused.stderr)")
        }
    }

    @Test(
        "another writer's object of the same size put at the key after the upload: no index is bound to it, and none is written"
    )
    func replacedAfterUpload() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, _) = try await Self.tarGzip(in: fixture)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let key = "raced.tar.gz"
        let url = "s3://\(fixture.bucket)/\(key)"
        let pool = HTTPClientPool(connection: HTTPConnectionOptions())
        defer { try? pool.syncShutdown() }
        let configuration = fixture.client.configuration
        let sources = BlobSources(remote: StoreSchemes(pool: pool) { configuration })

        // The same upload, then the same size of other bytes put at the key before finish.
        for replaced in [false, true] {
            let indexing = UploadIndexing(body: fixture.fileSource(path), name: url)
            var options = S3UploadOptions()
            options.partSize = 5 << 20
            let stored = try await S3Uploader(client: fixture.client).upload(
                indexing.body, to: fixture.location(key), options: options
            ).result
            var other = bytes
            if replaced {
                other[other.count / 2] ^= 0xFF
                _ = try await fixture.client.putObject(fixture.location(key), body: ByteBuffer(bytes: other))
            }
            if replaced {
                await #expect {
                    try await indexing.finish(objectAt: url, stored: stored, sources: sources)
                } throws: { error in
                    let error = error as? BlobStreamError
                    return error?.code == .changed && error?.message.contains(url) == true
                }
                await #expect(throws: (any Error).self) { try await fixture.stored(key + ".blobidx") }
                await #expect(throws: (any Error).self) { try await fixture.stored(key + ".gzidx") }
            } else {
                let outcome = try await indexing.finish(objectAt: url, stored: stored, sources: sources)
                guard case .kept(let kept) = outcome else {
                    Issue.record("no index kept: \(outcome)")
                    continue
                }
                #expect(kept.map(\.location).contains(url + ".blobidx"))
                let index = try ArchiveIndex(decoding: try await fixture.stored(key + ".blobidx"), name: "kept")
                #expect(index.identity.entityTag.map { $0.contains(stored.entityTag ?? "-") } == true)
                // Clear the key for the raced round.
                try await fixture.store.swiftAPI.delete(fixture.bucket, key + ".blobidx")
                try await fixture.store.swiftAPI.delete(fixture.bucket, key + ".gzidx")
            }
        }
    }

    @Test("--index-output that would replace an input or the object: refused with status 2 before anything is sent")
    func indexOutputOverAnInput() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, _) = try await Self.tarGzip(in: fixture)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        _ = try await fixture.client.putObject(fixture.location("src.tar.gz"), body: ByteBuffer(bytes: before))
        let fifo = fixture.folder.appendingPathComponent("fifo").path
        try #require(mkfifo(fifo, 0o600) == 0)
        let folder = fixture.folder.appendingPathComponent("folder").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let link = fixture.folder.appendingPathComponent("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        let dst = "s3://\(fixture.bucket)/dst.tar.gz"
        let src = "s3://\(fixture.bucket)/src.tar.gz"
        let rows: [(arguments: [String], says: String)] = [
            (["upload", path, "--to", dst, "--build-index", "--index-output", path], "is the input"),
            (["upload", path, "--to", dst, "--build-index", "--index-output", link], "is the input"),
            (["upload", path, "--to", dst, "--build-index", "--index-output", "file://" + path], "is the input"),
            (["upload", path, "--to", dst, "--build-index", "--index-output", dst], "the object uploaded"),
            (["upload", src, "--to", dst, "--build-index", "--index-output", src], "the source object"),
            (["upload", path, "--to", dst, "--build-index", "--index-output", fifo], "a FIFO"),
            (["upload", path, "--to", dst, "--build-index", "--index-output", folder], "a directory"),
            (["index", src, "--output", src], "the object indexed"),
            (["index", "gzip:" + src, "--output", src], "the object indexed"),
        ]
        for row in rows {
            let refused = try await S3Tool.run(
                row.arguments + ["--endpoint-url", fixture.store.endpoint], environment: environment)
            #expect(refused.status == 2, "\(row.arguments): \(refused.stderr)")
            #expect(refused.stderr.contains(row.says), "\(row.arguments): \(refused.stderr)")
        }
        // Nothing was sent, nothing replaced.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try await fixture.stored("src.tar.gz") == before)
        await #expect(throws: (any Error).self) { try await fixture.stored("dst.tar.gz") }
        var info = stat()
        #expect(stat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
    }

    @Test(
        "upload --build-index with BLOBSTREAM_INDEX_KEY: both index objects sealed; used with the key, not with another"
    )
    func sealedByTheUpload() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, members) = try await Self.tarGzip(in: fixture)
        let key = "sealed.tar.gz"
        let sealKey = String(repeating: "5a", count: 32)
        var environment = S3Tool.environment(fixture.store, home: fixture.folder)
        environment["BLOBSTREAM_INDEX_KEY"] = sealKey
        let upload = try await S3Tool.run(
            [
                "upload", path, "--to", "s3://\(fixture.bucket)/\(key)", "--endpoint-url", fixture.store.endpoint,
                "--part-size", "5MiB", "--build-index",
            ], environment: environment)
        try #require(upload.status == 0, "\(upload.stderr)")
        for sidecar in [key + ".blobidx", key + ".gzidx"] {
            let stored = try await fixture.stored(sidecar)
            #expect(stored.suffix(41).prefix(9) == Data("BSIDXMAC".utf8) + [1], "\(sidecar) sealed")
        }
        let (name, data) = try #require(members.first { $0.value.count < 10_000 })
        let url = "archive:s3://\(fixture.bucket)/\(key)!/\(name)"
        for (readKey, used) in [(sealKey, true), (String(repeating: "a5", count: 32), false)] {
            var readEnvironment = S3ReadToolTests.environment(fixture)
            readEnvironment["BLOBSTREAM_INDEX_KEY"] = readKey
            let read = try await S3ReadToolTests.run(["cat", "--verbose", url], environment: readEnvironment)
            #expect(read.status == 0 && read.stdout == data, "\(read.stderr)")
            #expect(read.stderr.contains("does not verify") != used, "\(read.stderr)")
            #expect(read.stderr.contains("not used") != used, "\(read.stderr)")
        }
    }
}
