import BlobStream
import BlobStreamArchive
import BlobStreamCompression
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamSources
import Foundation
import SharedTestHelpers
import Testing

/// Indexes built from bytes fed in order (`IndexSink`, what an upload from a pipe feeds): the
/// same index the builders give from a file, the format told from the bytes, and errors
/// (damage, a size that does not match, a cancel) never an index.
@Suite("IndexSink: indexes from bytes fed in order")
struct IndexSinkTests {
    static let spacing = 16 * 1024

    /// Feeds `data` in pieces whose sizes cycle through `pieces`.
    static func feed(_ data: Data, to sink: IndexSink, pieces: [Int]) {
        data.withUnsafeBytes { all in
            var offset = 0
            var i = 0
            while offset < all.count {
                let n = min(pieces[i % pieces.count], all.count - offset)
                sink.consume(UnsafeRawBufferPointer(rebasing: all[offset..<offset + n]))
                offset += n
                i += 1
            }
        }
    }

    /// A zip without what follows its end record: bsdtar pads what it writes to a pipe to
    /// its block size with zeros (a zip file's end record must end it).
    static func unpadded(_ zip: Data) -> Data {
        let end = Data([0x50, 0x4B, 0x05, 0x06])
        guard let record = zip.range(of: end, options: .backwards) else { return zip }
        let at = record.lowerBound - zip.startIndex
        let comment = Int(zip[zip.startIndex + at + 20]) | Int(zip[zip.startIndex + at + 21]) << 8
        return Data(zip.prefix(at + 22 + comment))
    }

    static func objectIdentity(size: Int) -> BlobContentIdentity {
        BlobContentIdentity(
            size: Int64(size), modified: .init(seconds: 0, nanoseconds: 0), sampleCRC32s: [], entityTag: "\"e-1\"")
    }

    @Test(
        "a tar.gz and a plain tar fed in pieces give the member index a build from the file gives; members read through it",
        arguments: ["tar.gz", "tar"], [[1, 7, 4_093], [200_000]])
    func archives(_ kind: String, pieces: [Int]) throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("index-sink")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tar = try #require(fixtures.archives["pax.tar"])
        let path = dir + "/a." + kind
        try run("sh", ["-c", kind == "tar" ? "cp '\(tar)' '\(path)'" : "gzip -6 -c '\(tar)' > '\(path)'"])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let fromFile = try ArchiveIndex.build(archiveAt: path, gzipSpacing: Self.spacing, engine: .zlib)

        let sink = IndexSink(name: path, spacing: Self.spacing, engine: .zlib)
        Self.feed(bytes, to: sink, pieces: pieces)
        let identity = try BlobContentIdentity(ofFileAtPath: path)
        let built = try sink.finish(identity: identity)
        guard case .archive(let index) = built else {
            Issue.record("\(kind): no member index: \(built)")
            return
        }
        #expect(index.format == fromFile.format, "\(kind)")
        #expect(index.members == fromFile.members, "\(kind)")
        #expect(index.identity == identity)
        #expect(
            index.gzipIndex?.points.map(\.uncompressedOffset) == fromFile.gzipIndex?.points.map(\.uncompressedOffset))
        #expect(index.gzipIndex?.identity == (kind == "tar" ? nil : identity))
        for name in memberNames(index) {
            let read = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(index)))
            #expect(read.error == nil && read.last == 0, "\(kind) \(name): \(String(describing: read.error))")
            #expect(read.data == fixtures.files[stripDotSlash(name)], "\(kind) \(name)")
        }
    }

    @Test("a gzip stream that holds no tar gives its seek points; reads at offsets through them are the bytes")
    func gzipStream() throws {
        let dir = try makeTemporaryDirectory("index-sink-gz")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plain = randomBytes(300_000, seed: 5) + Data(repeating: 0x61, count: 400_000)
        try write(plain, to: dir + "/plain")
        try run("sh", ["-c", "gzip -6 -c '\(dir)/plain' > '\(dir)/a.gz'"])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/a.gz"))
        let sink = IndexSink(name: "a.gz", spacing: Self.spacing, engine: .zlib)
        Self.feed(bytes, to: sink, pieces: [3, 65_537])
        let identity = try BlobContentIdentity(ofFileAtPath: dir + "/a.gz")
        guard case .gzip(let index) = try sink.finish(identity: identity) else {
            Issue.record("no gzip index")
            return
        }
        #expect(index.identity == identity)
        #expect(index.uncompressedSize == Int64(plain.count))
        #expect(index.points.count > 4, "\(index.points.count) points")
        #expect(
            try GzipIndex.build(fileAtPath: dir + "/a.gz", spacing: Self.spacing, engine: .zlib).points.count
                == index.points.count)
        for offset in [0, 123_456, 650_000] {
            let source = GzipDataSource(upstream: FileDataSource(path: dir + "/a.gz"), index: index)
            let read = drain(source, offset: offset)
            #expect(read.error == nil, "\(offset): \(String(describing: read.error))")
            #expect(read.data == plain.dropFirst(offset), "offset \(offset)")
        }
    }

    @Test(
        "a tar.zst fed in pieces (one frame, or frames and a seek table) gives the member index the file gives; members read through it",
        arguments: [false, true])
    func tarZstd(seekable: Bool) throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("index-sink-zst")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tar = try #require(fixtures.archives["pax.tar"])
        let path = dir + "/a.tar.zst"
        if seekable {
            let compressor = try ZstdSeekableCompressor(level: 3, frameSize: 32 * 1024)
            var out = Data()
            try Data(contentsOf: URL(fileURLWithPath: tar)).withUnsafeBytes { bytes in
                try compressor.append(bytes) { out.append(contentsOf: $0) }
            }
            try compressor.finish { out.append(contentsOf: $0) }
            try out.write(to: URL(fileURLWithPath: path))
        } else {
            try run("zstd", ["-q", "--check", tar, "-o", path])
        }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let fromFile = try ArchiveIndex.build(archiveAt: path)
        let sink = IndexSink(name: path)
        Self.feed(bytes, to: sink, pieces: [1, 7, 4_093])
        let identity = try BlobContentIdentity(ofFileAtPath: path)
        guard case .archive(let index) = try sink.finish(identity: identity) else {
            Issue.record("no member index")
            return
        }
        #expect(index.format == .tarZstd && index.identity == identity)
        #expect(index.members == fromFile.members)
        #expect(index.zstdFrames == fromFile.zstdFrames)
        for name in memberNames(index) {
            let read = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(index)))
            #expect(read.error == nil && read.data == fixtures.files[stripDotSlash(name)], "\(name)")
        }
    }

    @Test(
        "a zip fed in pieces (deflated, stored, written to a pipe) gives the member index the file gives; members read through it",
        arguments: ["zip", "stored.zip", "streamed.zip"], [[1, 7, 4_093], [200_000]])
    func zips(_ kind: String, pieces: [Int]) throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("index-sink-zip")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.zip"
        try write(
            Self.unpadded(try Data(contentsOf: URL(fileURLWithPath: try #require(fixtures.archives[kind])))), to: path)
        let fromFile = try ArchiveIndex.build(archiveAt: path)
        let sink = IndexSink(name: path)
        Self.feed(try Data(contentsOf: URL(fileURLWithPath: path)), to: sink, pieces: pieces)
        let identity = try BlobContentIdentity(ofFileAtPath: path)
        let built = try sink.finish(identity: identity)
        guard case .archive(let index) = built else {
            Issue.record("\(kind): no member index: \(built)")
            return
        }
        #expect(index.format == .zip && index.identity == identity)
        #expect(index.members == fromFile.members, "\(kind)")
        for name in memberNames(index) {
            let read = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(index)))
            #expect(read.error == nil && read.last == 0, "\(kind) \(name): \(String(describing: read.error))")
            #expect(read.data == fixtures.files[stripDotSlash(name)], "\(kind) \(name)")
        }
    }

    @Test(
        "a zip whose stored member holds the signatures of a directory entry, a local header and an end record: the same index as its file's",
        arguments: [false, true])
    func zipDecoys(streamed: Bool) throws {
        let dir = try makeTemporaryDirectory("index-sink-zip-decoys")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/tree", withIntermediateDirectories: true)
        let signature = { (kind: UInt8, next: UInt8) in Data([0x50, 0x4B, kind, next]) }
        let decoy =
            signature(1, 2) + randomBytes(100, seed: 3) + signature(3, 4) + Data(repeating: 0xFF, count: 40)
            + signature(5, 6) + randomBytes(70_000, seed: 4) + signature(5, 6) + randomBytes(300, seed: 5)
            + signature(1, 2) + Data(repeating: 0, count: 50)
        try write(decoy, to: dir + "/tree/decoy.bin")
        try write(Data("after the decoy\n".utf8), to: dir + "/tree/after.txt")
        let zip = dir + "/a.zip"
        let options = ["--format", "zip", "--options", "zip:compression=store", "-cf"]
        if streamed {
            try write(Self.unpadded(try run("bsdtar", options + ["-", "."], in: dir + "/tree").output), to: zip)
        } else {
            try run("bsdtar", options + [zip, "."], in: dir + "/tree")
        }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: zip))
        #expect(bytes.range(of: decoy) != nil, "the member is stored as it is")
        let sink = IndexSink(name: zip)
        Self.feed(bytes, to: sink, pieces: [3, 1_000])
        let identity = try BlobContentIdentity(ofFileAtPath: zip)
        let built = try sink.finish(identity: identity)
        guard case .archive(let index) = built else {
            Issue.record("no member index: \(built)")
            return
        }
        #expect(index.members == (try ArchiveIndex.build(archiveAt: zip)).members)
        let read = drain(ArchiveMemberDataSource(archive: zip, member: "decoy.bin", index: .index(index)))
        #expect(read.error == nil && read.data == decoy)
    }

    @Test("a .zst in many frames fed in pieces gives its frame index; one frame gives none, and says why")
    func zstdFrames() throws {
        let dir = try makeTemporaryDirectory("index-sink-zstd-frames")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plain = randomBytes(300_000, seed: 9) + Data(repeating: 0x62, count: 300_000)
        try write(plain, to: dir + "/plain")
        try run(
            "sh",
            [
                "-c",
                "cd '\(dir)' && split -b 100000 plain p. && for f in p.*; do zstd -q -c --check \"$f\"; done > frames.zst && zstd -q -c plain > one.zst",
            ])
        let frames = try Data(contentsOf: URL(fileURLWithPath: dir + "/frames.zst"))
        let sink = IndexSink(name: "frames.zst")
        Self.feed(frames, to: sink, pieces: [3, 65_537])
        let identity = try BlobContentIdentity(ofFileAtPath: dir + "/frames.zst")
        guard case .zstd(let index) = try sink.finish(identity: identity) else {
            Issue.record("no frame index")
            return
        }
        #expect(index == (try ZstdFrameIndex.build(fileAtPath: dir + "/frames.zst")))
        #expect(index.frames.frames.count == 6)
        let one = try Data(contentsOf: URL(fileURLWithPath: dir + "/one.zst"))
        let oneSink = IndexSink(name: "one.zst")
        Self.feed(one, to: oneSink, pieces: [65_536])
        guard case .none(let reason) = try oneSink.finish(identity: Self.objectIdentity(size: one.count)) else {
            Issue.record("an index of one frame")
            return
        }
        #expect(reason.contains("one.zst") && reason.contains("one zstd frame"), "\(reason)")
        // A flipped byte in a frame: an error, never an index.
        var damaged = frames
        damaged[frames.count / 2] ^= 0x08
        let bad = IndexSink(name: "damaged.zst")
        Self.feed(damaged, to: bad, pieces: [10_000])
        #expect(throws: BlobStreamError.self) { _ = try bad.finish(identity: Self.objectIdentity(size: damaged.count)) }
    }

    @Test(
        "bytes no builder takes from a stream (a zip cut before its central directory among them): no index, and a reason naming the format",
        arguments: [
            ("zip", Data([0x50, 0x4B, 0x03, 0x04]) + Data(repeating: 0, count: 100), "no central directory"),
            ("xz", Data([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) + Data(repeating: 1, count: 100), "xz"),
            ("text", Data("hello, not an archive\n".utf8), "neither gzip"),
            ("nothing", Data(), "neither gzip"),
        ])
    func notIndexed(_ label: String, bytes: Data, why: String) throws {
        let sink = IndexSink(name: label)
        Self.feed(bytes, to: sink, pieces: [5])
        guard case .none(let reason) = try sink.finish(identity: Self.objectIdentity(size: bytes.count)) else {
            Issue.record("\(label): an index")
            return
        }
        #expect(reason.contains(label) && reason.contains(why), "\(reason)")
    }

    @Test("a flipped byte, a cut stream or a size the object does not have: an error, never an index")
    func failures() throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("index-sink-bad")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try run("sh", ["-c", "gzip -6 -c '\(try #require(fixtures.archives["pax.tar"]))' > '\(dir)/a.tar.gz'"])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/a.tar.gz"))
        var flipped = bytes
        flipped[bytes.count / 2] ^= 0x10
        let cases: [(String, Data, Int, BlobStreamError.Code)] = [
            ("flipped", flipped, flipped.count, .corrupt),
            ("cut", bytes.prefix(bytes.count - 9), bytes.count - 9, .truncated),
            ("other size", bytes, bytes.count + 1, .changed),
        ]
        for (label, data, size, code) in cases {
            let sink = IndexSink(name: "s3://b/a.tar.gz", spacing: Self.spacing, engine: .zlib)
            Self.feed(data, to: sink, pieces: [70_000])
            do {
                let built = try sink.finish(identity: Self.objectIdentity(size: size))
                Issue.record("\(label): \(built)")
            } catch {
                #expect(error.code == code || (label == "flipped" && error.code == .truncated), "\(label): \(error)")
                #expect(error.message.contains("s3://b/a.tar.gz"), "\(label): \(error)")
            }
        }
    }

    @Test("cancelled midway (the builder waiting for bytes): finish is an error, and nothing waits")
    func cancelled() throws {
        let data = randomBytes(2_000_000, seed: 9)
        let dir = try makeTemporaryDirectory("index-sink-cancel")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(data, to: dir + "/r")
        try run("sh", ["-c", "gzip -1 -c '\(dir)/r' > '\(dir)/r.gz'"])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/r.gz"))
        let sink = IndexSink(name: "r.gz")
        Self.feed(bytes.prefix(bytes.count / 2), to: sink, pieces: [100_000])
        sink.cancel()
        Self.feed(bytes.suffix(from: bytes.count / 2), to: sink, pieces: [100_000]) // dropped
        #expect(throws: BlobStreamError.self) { try sink.finish(identity: Self.objectIdentity(size: bytes.count)) }
    }
}
