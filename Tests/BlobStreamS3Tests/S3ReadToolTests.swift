import BlobStream
import BlobStreamS3
import Foundation
import NIOCore
import NginxTestServer
import SwiftStoreTestServer
import Testing

/// `blobstream cat|checksum s3://…` with the store's endpoint and credentials in the
/// environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), as awscli reads them.
@Suite("blobstream cat|checksum s3://", .serialized)
struct S3ReadToolTests {
    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: String
    }

    /// Runs `blobstream ARGS` to its end, off the cooperative pool (`ProgramRuns`); stdout and
    /// stderr collected.
    static func run(
        _ arguments: [String], environment: [String: String], executable: String = S3Tool.binary
    ) async throws -> Output {
        try await ProgramRuns.run {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.environment = environment
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let errText = Locked(Data())
            let done = DispatchSemaphore(value: 0)
            Thread {
                let text = err.fileHandleForReading.readDataToEndOfFile()
                errText.withLock { $0 = text }
                done.signal()
            }.start()
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            done.wait()
            return Output(
                status: process.terminationStatus, stdout: stdout,
                stderr: String(decoding: errText.withLock { $0 }, as: UTF8.self))
        }
    }

    static func environment(_ fixture: StoreFixture, secret: String? = nil) -> [String: String] {
        var environment = S3Tool.environment(fixture.store, secret: secret, home: fixture.folder)
        environment["AWS_ENDPOINT_URL"] = fixture.store.endpoint
        return environment
    }

    var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/archives")
    }

    @Test("cat s3://… gives the object's bytes; checksum --offset the sha256 of the rest")
    func catAndOffset() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(5 << 20 | 123, seed: 81)
        _ = try await fixture.client.putObject(fixture.location("a/big.bin"), body: ByteBuffer(bytes: data))
        let url = "s3://\(fixture.bucket)/a/big.bin"
        let cat = try await Self.run(["cat", url], environment: Self.environment(fixture))
        #expect(cat.status == 0, "\(cat.stderr)")
        #expect(sha256Hex(cat.stdout) == sha256Hex(data))
        let offset = 4 << 20 | 7
        let sum = try await Self.run(
            ["checksum", "--offset", "\(offset)", url], environment: Self.environment(fixture))
        #expect(sum.status == 0, "\(sum.stderr)")
        let expected = sha256Hex(data.subdata(in: offset..<data.count))
        #expect(String(decoding: sum.stdout, as: UTF8.self) == "\(expected)  \(url)\n")
    }

    @Test(
        "gzip:s3:// and archive:s3://…!/member give the checksums of the same compositions over the local files",
        arguments: [
            ("gzip:", "sample.txt.gz", ""),
            ("archive:", "photos.tar", "!/DCIM/100TEST/IMG_0001.JPG"),
            ("archive:gzip:", "photos.tar.gz", "!/notes/sample.txt"),
        ])
    func compositions(prefix: String, name: String, member: String) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let bytes = try Data(contentsOf: fixtures.appendingPathComponent(name))
        _ = try await fixture.client.putObject(fixture.location("in/" + name), body: ByteBuffer(bytes: bytes))
        let environment = Self.environment(fixture)
        let local = try await Self.run(
            ["checksum", prefix + "file://" + fixtures.appendingPathComponent(name).path + member],
            environment: environment)
        let remote = try await Self.run(
            ["checksum", prefix + "s3://\(fixture.bucket)/in/" + name + member], environment: environment)
        #expect(local.status == 0, "\(local.stderr)")
        #expect(remote.status == 0, "\(remote.stderr)")
        let hash = { (output: Output) in String(decoding: output.stdout, as: UTF8.self).prefix(64) }
        #expect(hash(local).count == 64)
        #expect(hash(remote) == hash(local))
    }

    @Test("zstd:s3:// and archive:zstd:s3://…!/member: the checksums of the same compositions over the local file")
    func zstdCompositions() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        // photos.tar in two zstd frames, with a skippable frame between them (octal escapes:
        // sh's printf has no \x).
        let tar = try Data(contentsOf: fixtures.appendingPathComponent("photos.tar"))
        let local = fixture.folder.appendingPathComponent("photos.tar.zst")
        let made = try await S3Tool.runShell(
            """
            set -e; head -c 100000 '\(fixtures.appendingPathComponent("photos.tar").path)' | zstd -q -3 > '\(local.path)'
            printf '\\136\\052\\115\\030\\003\\000\\000\\000abc' >> '\(local.path)'
            tail -c +100001 '\(fixtures.appendingPathComponent("photos.tar").path)' | zstd -q -19 >> '\(local.path)'
            """, environment: Self.environment(fixture))
        try #require(made.status == 0, "\(made.stderr)")
        let bytes = try Data(contentsOf: local)
        _ = try await fixture.client.putObject(fixture.location("in/photos.tar.zst"), body: ByteBuffer(bytes: bytes))
        let environment = Self.environment(fixture)
        let remoteURL = "zstd:s3://\(fixture.bucket)/in/photos.tar.zst"
        let whole = try await Self.run(["checksum", remoteURL], environment: environment)
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(String(decoding: whole.stdout, as: UTF8.self).hasPrefix(sha256Hex(tar)), "\(whole.stderr)")
        let member = "!/DCIM/100TEST/IMG_0001.JPG"
        let fromLocal = try await Self.run(
            ["checksum", "archive:zstd:file://" + local.path + member], environment: environment)
        let fromStore = try await Self.run(["checksum", "archive:" + remoteURL + member], environment: environment)
        #expect(fromLocal.status == 0, "\(fromLocal.stderr)")
        #expect(fromStore.status == 0, "\(fromStore.stderr)")
        let hash = { (output: Output) in String(decoding: output.stdout, as: UTF8.self).prefix(64) }
        #expect(hash(fromLocal).count == 64 && hash(fromStore) == hash(fromLocal))
    }

    @Test(
        "a seekable .zst on the store: cat --offset enters its frame through the seek table (frame 0 damaged: not read)"
    )
    func seekableZstd() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let tar = try Data(contentsOf: fixtures.appendingPathComponent("photos.tar"))
        let local = fixture.folder.appendingPathComponent("photos.tar.zst")
        let made = try await Self.run(
            [
                "compress", "--seekable", "--frame-size", "16KiB", fixtures.appendingPathComponent("photos.tar").path,
                "-o", local.path,
            ], environment: Self.environment(fixture))
        try #require(made.status == 0, "\(made.stderr)")
        var bytes = try Data(contentsOf: local)
        // A byte in the middle of frame 0 changed: a read from the start fails there; a read
        // that enters a later frame through the table never decodes frame 0.
        bytes[2000] ^= 0x55
        _ = try await fixture.client.putObject(fixture.location("in/photos.tar.zst"), body: ByteBuffer(bytes: bytes))
        let environment = Self.environment(fixture)
        let url = "zstd:s3://\(fixture.bucket)/in/photos.tar.zst"
        let offset = tar.count - 20_000
        #expect(offset > 4 * 16_384, "past frame 0")
        let read = try await Self.run(
            ["cat", "--offset", "\(offset)", "--length", "10000", url], environment: environment)
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout == tar[offset..<offset + 10_000])
        let whole = try await Self.run(["checksum", url], environment: environment)
        #expect(whole.status == 1 && whole.stderr.contains("photos.tar.zst"), "\(whole.stderr)")
    }

    @Test(
        "a .zst in frames with no seek table on the store: index writes KEY.zstidx beside it, cat --offset enters its frame; a replaced object's is not used"
    )
    func zstdFrameIndex() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(600_000, seed: 21)
        let local = fixture.folder.appendingPathComponent("data")
        try data.write(to: local)
        let made = try await S3Tool.runShell(
            """
            set -e; cd '\(fixture.folder.path)'; split -b 100000 data piece.
            for f in piece.*; do zstd -q -c --check "$f"; done > frames.zst
            """, environment: Self.environment(fixture))
        try #require(made.status == 0, "\(made.stderr)")
        let environment = Self.environment(fixture)
        let object = "s3://\(fixture.bucket)/in/frames.zst"
        let intact = try Data(contentsOf: fixture.folder.appendingPathComponent("frames.zst"))
        _ = try await fixture.client.putObject(fixture.location("in/frames.zst"), body: ByteBuffer(bytes: intact))
        let index = try await Self.run(["index", object], environment: environment)
        #expect(index.status == 0, "\(index.stderr)")
        #expect(
            String(decoding: index.stdout, as: UTF8.self).hasPrefix(object + ".zstidx\t6 frames\t"),
            "\(String(decoding: index.stdout, as: UTF8.self))")
        // The object replaced by one with a byte of frame 0 changed: the index (another ETag) is
        // not used, and says so; the read from the start meets the damage; an index pass fails.
        var bytes = intact
        bytes[2000] ^= 0x55
        _ = try await fixture.client.putObject(fixture.location("in/frames.zst"), body: ByteBuffer(bytes: bytes))
        let stale = try await Self.run(
            ["cat", "--verbose", "--offset", "550000", "--length", "1000", "zstd:" + object], environment: environment)
        #expect(stale.stderr.contains("an index was found but not used"), "\(stale.stderr)")
        #expect(
            stale.status == 1 && stale.stderr.contains("frames.zst"),
            "a read from the start meets frame 0: \(stale.stderr)")
        let again = try await Self.run(["index", object], environment: environment)
        #expect(again.status == 1, "the damaged frame 0 fails the index pass: \(again.stderr)")
        _ = try await fixture.client.putObject(fixture.location("in/frames.zst"), body: ByteBuffer(bytes: intact))
        let rebuilt = try await Self.run(["index", object], environment: environment)
        try #require(rebuilt.status == 0, "\(rebuilt.stderr)")
        let read = try await Self.run(
            ["cat", "--verbose", "--offset", "550000", "--length", "1000", "zstd:" + object], environment: environment)
        #expect(read.status == 0 && read.stdout == data[550_000..<551_000], "\(read.stderr)")
        #expect(read.stderr.contains("entered through its frame index (6 frames)"), "\(read.stderr)")
    }

    @Test("a missing key and wrong credentials: exit 1, one line naming s3://bucket/key")
    func failures() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        _ = try await fixture.client.putObject(fixture.location("here.bin"), body: ByteBuffer(bytes: [1, 2, 3]))
        let missing = "s3://\(fixture.bucket)/not/here.bin"
        let notFound = try await Self.run(["cat", missing], environment: Self.environment(fixture))
        #expect(notFound.status == 1)
        #expect(notFound.stdout.isEmpty)
        #expect(notFound.stderr.contains(missing) && notFound.stderr.contains("NoSuchKey"), "\(notFound.stderr)")
        #expect(notFound.stderr.split(separator: "\n").count == 1, "\(notFound.stderr)")

        let here = "s3://\(fixture.bucket)/here.bin"
        let denied = try await Self.run(["cat", here], environment: Self.environment(fixture, secret: "wrong"))
        #expect(denied.status == 1)
        #expect(denied.stdout.isEmpty)
        #expect(denied.stderr.contains(here) && denied.stderr.contains("403"), "\(denied.stderr)")

        var none = Self.environment(fixture)
        none["AWS_ACCESS_KEY_ID"] = nil
        none["AWS_SECRET_ACCESS_KEY"] = nil
        let noCredentials = try await Self.run(["cat", here], environment: none)
        #expect(noCredentials.status == 1)
        #expect(
            noCredentials.stderr.contains(here) && noCredentials.stderr.contains("credentials"),
            "\(noCredentials.stderr)")
    }
}
