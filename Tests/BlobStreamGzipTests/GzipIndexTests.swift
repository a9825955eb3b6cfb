import BlobStream
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// A folder of test files, removed at the end.
final class IndexTestFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-gzindex-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    func write(_ name: String, _ data: Data) throws -> String {
        try data.write(to: url.appendingPathComponent(name))
        return path(name)
    }
}

/// Three members: text, random (stored blocks), text; and their plain decode.
struct MultiMember {
    let plain: Data
    let gz: Data
    /// Where each member starts in the compressed and the uncompressed bytes.
    let compressedStarts: [Int]
    let plainStarts: [Int]

    static let shared = Result { try MultiMember() }

    init() throws {
        let parts = [textBytes(3 << 20, seed: 1), randomBytes(1 << 20, seed: 2), textBytes(2 << 20, seed: 3)]
        var plain = Data()
        var gz = Data()
        var cs: [Int] = []
        var ps: [Int] = []
        for part in parts {
            cs.append(gz.count)
            ps.append(plain.count)
            plain += part
            gz += try Gzip.compress(part)
        }
        self.plain = plain
        self.gz = gz
        compressedStarts = cs
        plainStarts = ps
    }
}

/// Reads `count` bytes (or to the end) at `offset` from a gzip source over the file at
/// `path` with `index` (decoding on `parallelism` threads; a foreign index only with
/// `acceptsUncheckedIndex`); the bytes and the error, if any.
func readIndexed(
    path: String, index: GzipIndex, at offset: Int64, count: Int = .max,
    parallelism: Int = GzipDataSource.defaultParallelism, acceptsUncheckedIndex: Bool = false
) -> (Data, BlobStreamError?) {
    let source = GzipDataSource(
        upstream: FileDataSource(path: path), name: path, index: index, parallelism: parallelism,
        acceptsUncheckedIndex: acceptsUncheckedIndex)
    defer { source.close() }
    source.open()
    do { try source.seek(to: offset) } catch { return (Data(), error) }
    var out = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while out.count < count {
        let n = buffer.withUnsafeMutableBufferPointer {
            source.read($0.baseAddress!, maxLength: min($0.count, count - out.count))
        }
        if n < 0 { return (out, source.error as? BlobStreamError) }
        if n == 0 { break }
        out.append(contentsOf: buffer[0..<n])
    }
    return (out, nil)
}

@Suite("Gzip index") struct GzipIndexTests {
    let input: MultiMember

    init() throws { input = try MultiMember.shared.get() }

    @Test("building finds every member's start and spaced points, and the chunk CRC-32s are those of the bytes")
    func buildsPoints() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10)
        #expect(index.compressedSize == Int64(input.gz.count))
        #expect(index.uncompressedSize == Int64(input.plain.count))
        let memberPoints = index.points.filter { $0.window == nil }.map { Int($0.uncompressedOffset) }
        #expect(memberPoints == input.plainStarts)
        #expect(index.points.count > 10)
        // Windowed points come at the first block boundary at least `spacing` after the last.
        let windowed = index.points.filter { $0.window != nil }.map(\.uncompressedOffset)
        #expect(zip(windowed, windowed.dropFirst()).allSatisfy { $1 - $0 >= 256 << 10 })
        for (i, point) in index.points.enumerated() {
            let end = i + 1 < index.points.count ? Int(index.points[i + 1].uncompressedOffset) : input.plain.count
            let chunk = input.plain[Int(point.uncompressedOffset)..<end]
            #expect(point.chunkCRC32 == crc32(chunk), "chunk \(i)")
            if let window = point.window {
                #expect(window.count == GzipIndex.windowSize)
                // The window holds this member's last bytes (zeros before the member's start).
                let start = Int(point.uncompressedOffset)
                let have = min(32768, start - input.plainStarts.last { $0 <= start }!)
                #expect(Data(window.suffix(have)) == input.plain[start - have..<start])
            }
        }
        #expect(index.identity == (try BlobContentIdentity(ofFileAtPath: path)))
    }

    @Test("round trip: written, read back equal; seeks to many offsets give the plain decode's bytes")
    func roundTripAndSeeks() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let built = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10)
        let sidecar = GzipIndex.sidecar(of: path)
        try built.write(toPath: sidecar)
        let index = try GzipIndex.read(fromPath: sidecar)
        #expect(index == built)
        let offsets = [
            0, 1, 100_000, input.plainStarts[1] - 1, input.plainStarts[1], input.plainStarts[2] + 77, 5_000_000,
            input.plain.count - 10, input.plain.count,
        ]
        for offset in offsets + offsets.reversed() {
            let (bytes, error) = readIndexed(path: path, index: index, at: Int64(offset), count: 300_000)
            #expect(error == nil, "offset \(offset): \(String(describing: error))")
            let end = min(input.plain.count, offset + 300_000)
            #expect(sha256(bytes) == sha256(input.plain[offset..<end]), "offset \(offset)")
        }
        // To the end from the middle: every chunk and the last members' trailers checked.
        let (rest, error) = readIndexed(path: path, index: index, at: 4_000_000)
        #expect(error == nil)
        #expect(sha256(rest) == sha256(input.plain[4_000_000...]))
    }

    @Test("with an index the source seeks (and moves back and forth in one open)")
    func seeksWithinOneOpen() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10)
        let source = GzipDataSource(upstream: FileDataSource(path: path), name: path, index: index)
        defer { source.close() }
        #expect(source.offsetCapability == .seek)
        #expect(source.length == Int64(input.plain.count))
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        for offset in [5_500_000, 10, 3_200_000, 6_000_000] {
            try stream.seek(to: Int64(offset))
            var buffer = [UInt8](repeating: 0, count: 1000)
            var got = Data()
            while got.count < 1000 {
                let n = stream.read(&buffer, maxLength: 1000 - got.count)
                try #require(n > 0)
                got.append(contentsOf: buffer[0..<n])
            }
            #expect(got == input.plain[offset..<offset + 1000], "offset \(offset)")
        }
        stream.close()
    }

    @Test("a whole sequential read builds the same index as build(from:); a failed read builds none")
    func builtDuringRead() throws {
        let source = GzipDataSource(
            upstream: InMemoryDataSource(data: input.gz), name: "m.gz", buildsIndex: true, indexSpacing: 256 << 10)
        #expect(source.builtIndex == nil)
        let drained = drainSync(source)
        #expect(drained.last == 0)
        #expect(sha256(drained.data) == sha256(input.plain))
        let direct = try GzipIndex.build(from: InMemoryDataSource(data: input.gz), spacing: 256 << 10)
        #expect(source.builtIndex == direct)
        #expect(direct.points.count > 10)

        let truncated = GzipDataSource(
            upstream: InMemoryDataSource(data: input.gz.prefix(input.gz.count - 3)), name: "t.gz", buildsIndex: true)
        let failed = drainSync(truncated)
        #expect(failed.last == -1)
        #expect(failed.error?.code == .truncated)
        #expect(truncated.builtIndex == nil)
    }

    @Test("a chunk whose bytes changed in a copy with the same size and time is an error, not wrong bytes")
    func corruptChunkIsAnError() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10)
        // A byte in the middle of the random member (stored blocks: zlib cannot see it),
        // outside the identity's samples.
        let samples = BlobContentIdentity.sampleRanges(forSize: Int64(input.gz.count))
        var position = (input.compressedStarts[1] + input.compressedStarts[2]) / 2
        while samples.contains(where: { $0.contains(Int64(position)) }) { position += 4096 }
        var damaged = input.gz
        damaged[position] ^= 0x55
        let copy = try folder.write("copy.gz", damaged)
        try copyModificationTime(from: path, to: copy)
        try index.check(againstFileAtPath: copy, indexName: "m.gz.gzidx") // identity alone cannot tell
        let (bytes, error) = readIndexed(path: copy, index: index, at: Int64(input.plainStarts[1]) + 1000)
        let failure = try #require(error)
        #expect(failure.code == .changed)
        #expect(failure.message.contains("CRC-32"))
        #expect(failure.message.contains(copy))
        #expect(bytes.count < input.plain.count - input.plainStarts[1] - 1000)
    }

    @Test("an index is refused for a changed file and for another file, naming both")
    func staleAndForeignFileRefused() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 1 << 20)
        let sidecar = GzipIndex.sidecar(of: path)
        try index.write(toPath: sidecar)
        let other = try folder.write("other.gz", try Gzip.compress(textBytes(100_000, seed: 9)))
        #expect {
            try GzipIndex.lookUp(forFileAtPath: other, indexPath: sidecar)
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .changed && e!.message.contains(sidecar) && e!.message.contains(other)
        }
        // The same size, another time: still refused.
        var changed = input.gz
        changed[changed.count / 2] ^= 1
        try changed.write(to: URL(fileURLWithPath: path))
        #expect {
            try GzipIndex.lookUp(forFileAtPath: path, indexPath: sidecar)
        } throws: { error in
            let e = error as? BlobStreamError
            return e?.code == .changed && e!.message.contains(sidecar) && e!.message.contains(path)
        }
    }

    @Test("an implicit sidecar that is stale or foreign is never used: the index is rebuilt")
    func implicitStaleRebuilt() throws {
        let folder = try IndexTestFolder()
        let first = try Gzip.compress(textBytes(1 << 20, seed: 4))
        let path = try folder.write("f.gz", first)
        try GzipIndex.build(fileAtPath: path, spacing: 1 << 18).write(
            toPath: GzipIndex.sidecar(of: path))
        guard case .matching = try GzipIndex.lookUp(forFileAtPath: path) else {
            Issue.record("a fresh sidecar should match")
            return
        }
        let second = try Gzip.compress(textBytes(1 << 20, seed: 5))
        try second.write(to: URL(fileURLWithPath: path))
        guard case .unusable = try GzipIndex.lookUp(forFileAtPath: path) else {
            Issue.record("a stale sidecar must not be used")
            return
        }
        let rebuilt = try GzipIndex.loadOrBuild(forFileAtPath: path, spacing: 1 << 18)
        #expect(rebuilt.identity == (try BlobContentIdentity(ofFileAtPath: path)))
        let (bytes, error) = readIndexed(path: path, index: rebuilt, at: 500_000)
        #expect(error == nil)
        #expect(sha256(bytes) == sha256(textBytes(1 << 20, seed: 5)[500_000...]))
        // A foreign GZIDX (no BlobStream record) beside the file: not used implicitly, used
        // when named.
        var foreign = rebuilt
        foreign.identity = nil
        for i in foreign.points.indices { foreign.points[i].chunkCRC32 = nil }
        try foreign.write(toPath: GzipIndex.sidecar(of: path))
        guard case .unusable(let reason) = try GzipIndex.lookUp(forFileAtPath: path) else {
            Issue.record("a foreign sidecar must not be used implicitly")
            return
        }
        #expect(reason.contains("foreign"))
        guard
            case .matching = try GzipIndex.lookUp(
                forFileAtPath: path, indexPath: GzipIndex.sidecar(of: path))
        else {
            Issue.record("a foreign index the user names is used")
            return
        }
    }
}

/// The CRC-32 (zlib's) of `data`, computed by the test itself with a table.
func crc32(_ data: Data) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    data.withUnsafeBytes { bytes in
        for byte in bytes { crc = crcTable[Int(UInt8(truncatingIfNeeded: crc) ^ byte)] ^ (crc >> 8) }
    }
    return ~crc
}

private let crcTable: [UInt32] = (0..<256).map { (n: Int) -> UInt32 in
    var c = UInt32(n)
    for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
    return c
}

/// Gives `to` the modification time of `from`, to the nanosecond.
func copyModificationTime(from: String, to: String) throws {
    var status = stat()
    guard stat(from, &status) == 0 else { throw TestFailure("stat \(from) failed") }
    var times = [status.st_atim, status.st_mtim]
    guard utimensat(AT_FDCWD, to, &times, 0) == 0 else { throw TestFailure("utimensat \(to) failed") }
}

@Suite("Gzip index, an offset set before an asynchronous upstream opens")
struct GzipIndexLateOpenTests {
    @Test(
        "the first reads start at the seek point before the offset, not at the start (a remote object whose first answer comes after the move)"
    )
    func jumpsAfterLateOpen() throws {
        let folder = try IndexTestFolder()
        let plain = textBytes(1_500_000, seed: 51) + randomBytes(1_500_000, seed: 52)
        let gz = try Gzip.compress(plain)
        let path = try folder.write("late.gz", gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 64 * 1024)
        let chunk = 16 * 1024
        let upstream = InMemoryDataSource(
            data: gz, open: .async(queue: DispatchQueue(label: "late open"), delay: 0.05), chunkSize: chunk)
        let source = GzipDataSource(upstream: upstream, name: "late.gz", index: index, parallelism: 1)
        let offset = 2_800_000
        try source.seek(to: Int64(offset))
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        defer { stream.close() }
        let (bytes, last) = stream.readToEnd()
        #expect(last == 0, "\(String(describing: stream.streamError))")
        #expect(sha256(bytes) == sha256(plain.suffix(from: offset)))
        // From the seek point: the last ~200 KiB of compressed bytes, not all of them.
        let wholeDecode = gz.count / chunk
        #expect(upstream.readCount < wholeDecode / 4, "\(upstream.readCount) reads of \(wholeDecode) for all")
    }
}
