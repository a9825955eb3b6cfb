import BlobStream
import BlobStreamFiles
import BlobStreamSources
import BlobStreamTestSupport
import BlobStreamZstd
import Foundation
import SharedTestHelpers
import Testing

/// The checks XXH64 makes possible: a seekable file's frames that carry no checksum
/// of their own checked against the seek table's (the format's reference writer makes such
/// files), and a frame index that lies about a frame's size caught by its placed checksums.
@Suite("zstd integrity: seek-table checksums of frames without their own, lying frame indexes")
struct ZstdIntegrityTests {
    // MARK: - Seek tables with checksums, frames without

    /// 6 frames of 40,000 bytes: text, random (stored raw), text, …
    static let content: Data = {
        var data = Data()
        for part in 0..<6 {
            data +=
                part.isMultiple(of: 2)
                ? TestBytes.text(40_000, seed: UInt64(90 + part), words: ["seek", "table", "xxh"], lineEvery: 50)
                : TestBytes.random(40_000, seed: UInt64(90 + part))
        }
        return data
    }()
    static let frameSize = 40_000

    /// `content` as the seekable format's reference writer makes it: every frame without a
    /// checksum of its own (`zstd --no-check`), then a seek table whose entries carry each
    /// frame's checksum, taken from `zstd --check`'s frame of the same bytes (an independent
    /// XXH64). Also each frame's compressed offset.
    static func referenceStyleFile() throws -> (file: Data, offsets: [Int]) {
        var file = Data()
        var sizes: [(compressed: UInt32, decompressed: UInt32, checksum: UInt32?)] = []
        var offsets: [Int] = []
        for start in stride(from: 0, to: content.count, by: frameSize) {
            let part = Data(content[start..<min(content.count, start + frameSize)])
            let frame = try zstd(["--no-check", "-3"], part)
            let checked = try zstd(["--check", "-3"], part)
            let checksum = checked.suffix(4).withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            offsets.append(file.count)
            sizes.append((UInt32(frame.count), UInt32(part.count), checksum))
            file += frame
        }
        file += ZstdSeekTable(sizes: sizes).encoded()
        return (file, offsets)
    }

    /// Reads `count` bytes from `offset` of the .zst at `path` (a file: the table is read
    /// from its end) on `parallelism` threads, then on to the check point.
    static func read(_ path: String, at offset: Int, count: Int, parallelism: Int) -> (
        data: Data, error: BlobStreamError?
    ) {
        let source = ZstdDataSource(upstream: FileDataSource(path: path), name: path, parallelism: parallelism)
        return readRange(source, at: Int64(offset), count: count)
    }

    @Test(
        "a seekable file whose frames carry no checksum (the reference writer's): a changed byte that still decodes fails every read of its frame, whole, at an offset, in parallel"
    )
    func seekTableChecksums() throws {
        let dir = try ZstdFrameIndexTests.makeTemporaryDirectory("xxh-table")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (file, offsets) = try Self.referenceStyleFile()
        let length = Self.content.count
        let path = try ZstdFrameIndexTests.write(file, in: dir, as: "ref.zst")
        #expect(try zstd(["-d"], file) == Self.content, "zstd -d reads it as one stream")

        // The honest file: byte-exact, whole and at offsets, the table used and regular.
        for parallelism in [1, 2] {
            let whole = Self.read(path, at: 0, count: length + 1, parallelism: parallelism)
            #expect(whole.error == nil && whole.data == Self.content, "\(String(describing: whole.error))")
            for offset in [1, 45_000, 130_000, length - 10] {
                let got = Self.read(path, at: offset, count: 30_000, parallelism: parallelism)
                #expect(
                    got.error == nil && got.data == Self.content[offset..<min(length, offset + 30_000)],
                    "offset \(offset): \(String(describing: got.error))")
            }
        }

        // Bytes flipped inside frames (2 of text, 2 of random bytes), each still decoding (zstd -d
        // says so, with other bytes).
        var flips: [(position: Int, frame: Int)] = []
        for frame in [1, 2, 3, 4] {
            let start = offsets[frame]
            let end = frame + 1 < offsets.count ? offsets[frame + 1] : Int(file.count)
            for fraction in [0.3, 0.5, 0.7, 0.9] {
                let position = start + Int(Double(end - start) * fraction)
                var damaged = file
                damaged[position] ^= 0x04
                let alone = Data(damaged[start..<end])
                guard let decoded = try? zstd(["-d"], alone), decoded.count == Self.frameSize,
                    decoded != Self.content[(frame * Self.frameSize)..<((frame + 1) * Self.frameSize)]
                else { continue }
                flips.append((position, frame))
                break
            }
        }
        #expect(flips.count >= 3, "flips that still decode: \(flips)")
        for (position, frame) in flips {
            var damaged = file
            damaged[position] ^= 0x04
            let damagedPath = try ZstdFrameIndexTests.write(damaged, in: dir, as: "flip-\(position).zst")
            let frameStart = frame * Self.frameSize
            for parallelism in [1, 2] {
                for (what, offset, count) in [
                    ("whole", 0, length + 1), ("at an offset in the frame", frameStart + 1234, 5000),
                    ("from the frame before", frameStart - 100, 20_000),
                ] {
                    let got = Self.read(damagedPath, at: offset, count: count, parallelism: parallelism)
                    let error = try #require(
                        got.error, "byte \(position) (frame \(frame)) \(what), \(parallelism) threads: a clean end")
                    #expect(error.code == .corrupt, "\(error)")
                    #expect(
                        error.message.contains(damagedPath) && error.message.contains("frame \(frame)")
                            && error.message.contains("compressed offset \(offsets[frame])")
                            && error.message.contains("XXH64") && error.message.contains("0x"),
                        "\(what): \(error.message)")
                }
                // An untouched frame before it reads its bytes.
                let before = Self.read(damagedPath, at: 1000, count: 30_000, parallelism: parallelism)
                #expect(
                    before.error == nil && before.data == Self.content[1000..<31_000],
                    "\(String(describing: before.error))")
            }
        }
    }

    @Test("seek-table checksums over an upstream read in small pieces (a frame hashed in pieces), sync and from memory")
    func seekTableChecksumsInPieces() throws {
        let (file, offsets) = try Self.referenceStyleFile()
        var damaged = file
        // Random bytes are stored raw: any byte of the block changes one byte of the output.
        damaged[offsets[3] + 5000] ^= 0x01
        for parallelism in [1, 2] {
            let honest = readAll(zstdSource(file, chunkSize: 777, parallelism: parallelism), size: 1000)
            #expect(honest.last == 0 && honest.data == Self.content, "\(String(describing: honest.error))")
            let broken = readAll(zstdSource(damaged, chunkSize: 777, parallelism: parallelism), size: 1000)
            #expect(broken.last == -1 && broken.error?.code == .corrupt, "\(String(describing: broken.error))")
            #expect(broken.data.count <= 4 * Self.frameSize, "nothing after frame 3 handed out")
        }
    }

    // MARK: - Frame indexes that lie

    /// `bytes` of an index with the decompressed size of frame `frame` changed by `delta`
    /// (and, with `compressed`, its compressed size instead), its CRC-32 computed again.
    static func lie(_ bytes: [UInt8], frame: Int, delta: Int64, compressed: Bool = false) -> [UInt8] {
        var out = bytes
        // magic 8, version 2, reserved 2, size 8, seconds 8, nanoseconds 4, samples 4, ETag
        // length 2 (0: a file), frame count 8; then 21 bytes a frame.
        let tagLength = Int(bytes[36]) | Int(bytes[37]) << 8
        let at = 38 + tagLength + 8 + ZstdSeekTable.recordSize * frame + (compressed ? 0 : 8)
        var value: UInt64 = 0
        for i in 0..<8 { value |= UInt64(out[at + i]) << (8 * UInt64(i)) }
        value = UInt64(Int64(value) + delta)
        for i in 0..<8 { out[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
        let crc = out[..<(out.count - 4)].withUnsafeBytes { ZlibCRC32.update(0, $0) }
        for i in 0..<4 { out[out.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        return out
    }

    @Test(
        "a .zstidx with one frame's size changed and its CRC made again: reads at offsets in later frames fail naming the index; the honest one is byte-exact",
        arguments: [true, false])
    func lyingFrameIndex(regular: Bool) throws {
        let dir = try ZstdFrameIndexTests.makeTemporaryDirectory("zstidx-lie")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let content = ZstdFrameIndexTests.content
        let path = try ZstdFrameIndexTests.write(try ZstdFrameIndexTests.framed(regular: regular), in: dir, as: "f.zst")
        let honest = try ZstdFrameIndex.build(fileAtPath: path)
        #expect(honest.frames.frames.allSatisfy { $0.placedChecksum != nil })
        let sidecar = path + ".zstidx"
        let url = "zstd:" + URL(fileURLWithPath: path).absoluteString
        let frames = honest.frames.frames
        func later(_ k: Int) -> [Int] {
            let frame = frames[k]
            return [Int(frame.decompressedOffset) + 10, Int(frame.decompressedOffset + frame.decompressedSize) - 50]
        }

        try honest.write(toPath: sidecar)
        for offset in later(5) + later(frames.count - 1) + [0] {
            let source = try #require(try BlobSources().makeRegistry().makeSource(url: url) as? ZstdDataSource)
            let got = readRange(source, at: Int64(offset), count: 200_000)
            #expect(source.frameIndex == honest)
            #expect(
                got.error == nil && got.data == content[offset..<min(content.count, offset + 200_000)],
                "honest, offset \(offset): \(String(describing: got.error))")
        }

        // One frame's size made larger than the file allows: the index is refused whole, naming it
        // and the frame.
        try Data(Self.lie(honest.encoded(), frame: 1, delta: 1, compressed: true)).write(
            to: URL(fileURLWithPath: sidecar))
        do {
            _ = try ZstdFrameIndex.read(indexFileAt: sidecar)
            Issue.record("a compressed size past the file's end: read")
        } catch {
            #expect(
                error.code == .corrupt && error.message.contains(sidecar)
                    && error.message.contains("frame \(frames.count - 1)"), "\(error)")
        }
        for (what, edits, readFrames) in [
            ("frame 2's decompressed size + 4096", [(2, Int64(4096), false)], [3, frames.count - 1]),
            ("frame 3's decompressed size - 1", [(3, -1, false)], [4, frames.count - 1]),
            ("1 compressed byte moved from frame 2 to frame 1", [(1, 1, true), (2, -1, true)], [2]),
        ] {
            var lying = honest.encoded()
            for (frame, delta, compressed) in edits {
                lying = Self.lie(lying, frame: frame, delta: delta, compressed: compressed)
            }
            try Data(lying).write(to: URL(fileURLWithPath: sidecar))
            let read = try ZstdFrameIndex.read(indexFileAt: sidecar) // the CRC holds
            #expect(read != honest)
            for offset in readFrames.flatMap(later) {
                for parallelism in [1, 2] {
                    // Found beside the file (as `cat zstd:FILE` finds it), and given.
                    let found = try #require(
                        try BlobSources().makeRegistry().makeSource(url: url) as? ZstdDataSource)
                    let given = ZstdDataSource(
                        upstream: FileDataSource(path: path), name: path, parallelism: parallelism, frameIndex: read)
                    for source in [found, given] {
                        let got = readRange(source, at: Int64(offset), count: 100_000)
                        let error = try #require(got.error, "\(what), offset \(offset): a clean end")
                        #expect(error.code == .corrupt, "\(what): \(error)")
                        #expect(
                            error.message.contains(sidecar) && error.message.contains(path),
                            "\(what), offset \(offset): \(error.message)")
                    }
                }
            }
        }

        // An index of version 1 (before placed checksums) is not used: said, the bytes right.
        var old = honest.encoded()
        old[8] = 1
        try Data(old).write(to: URL(fileURLWithPath: sidecar))
        let source = try #require(try BlobSources().makeRegistry().makeSource(url: url) as? ZstdDataSource)
        #expect(source.frameIndex == nil)
        #expect(
            source.unusedIndexReason?.contains("version 1") == true
                && source.unusedIndexReason?.contains("build it again (ZstdFrameIndex.build)") == true,
            "\(String(describing: source.unusedIndexReason))")
        let got = readRange(source, at: 1_500_000, count: 1000)
        #expect(got.error == nil && got.data == content[1_500_000..<1_501_000])
    }

    @Test(
        "a copy of an object's frame index kept in the index cache that a read finds lying is removed from the cache; an honest one stays"
    )
    func lyingCachedIndexDropped() throws {
        let dir = try ZstdFrameIndexTests.makeTemporaryDirectory("zstidx-cache")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let content = ZstdFrameIndexTests.content
        let path = try ZstdFrameIndexTests.write(try ZstdFrameIndexTests.framed(regular: true), in: dir, as: "g.zst")
        let honest = try ZstdFrameIndex.build(fileAtPath: path)
        let cache = IndexCache(folder: dir + "/cache")
        let url = "s3://bucket/g.zst"
        let offset = Int(honest.frames.frames[6].decompressedOffset) + 100
        for (what, bytes) in [
            ("honest", honest.encoded()), ("lying", Self.lie(honest.encoded(), frame: 2, delta: 512)),
        ] {
            let kept = try cache.keep(bytes, forSourceAt: url, identity: honest.identity, kind: .zstd)
            let index = try ZstdFrameIndex.read(indexFileAt: kept)
            for parallelism in [1, 2] {
                guard FileManager.default.fileExists(atPath: kept) else { break }
                let source = ZstdDataSource(
                    upstream: FileDataSource(path: path), name: url, parallelism: parallelism, frameIndex: index)
                let got = readRange(source, at: Int64(offset), count: 300_000)
                if what == "honest" {
                    #expect(got.error == nil && got.data == content[offset..<offset + 300_000])
                    #expect(FileManager.default.fileExists(atPath: kept), "the honest copy stays")
                } else {
                    #expect(got.error?.code == .corrupt && got.error?.message.contains(kept) == true)
                    #expect(!FileManager.default.fileExists(atPath: kept), "the lying copy is removed")
                }
            }
        }
    }
}
