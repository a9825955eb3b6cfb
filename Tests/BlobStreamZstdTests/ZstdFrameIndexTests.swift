import BlobStream
import BlobStreamFiles
import BlobStreamSources
import BlobStreamZstd
import Foundation
import SharedTestHelpers
import Testing

/// `ZstdFrameIndex`: the frames of a .zst in many frames with no seek table, recorded by one
/// decoding pass, written as `FILE.zst.zstidx`, found beside the file and used to enter the
/// frame that holds an offset; a damaged or stale index is never used, one that lies never
/// gives other bytes.
@Suite("zstd frame indexes (.zstidx)")
struct ZstdFrameIndexTests {
    static let content = ZstdSeekableTests.content

    /// `content` in frames with no seek table: `regular` in 128 KiB frames, otherwise the
    /// first half in 96 KiB frames and the rest in 320 KiB ones.
    static func framed(regular: Bool) throws -> Data {
        func frames(_ bytes: Data, _ size: Int) throws -> Data {
            let (file, table) = try seekable(bytes, frameSize: size)
            return file.prefix(Int(table.compressedLength)) // the seek table cut off
        }
        if regular { return try frames(content, 128 << 10) }
        let half = content.count / 2
        return try frames(Data(content.prefix(half)), 96 << 10) + frames(Data(content.suffix(from: half)), 320 << 10)
    }

    /// A fresh temporary folder.
    static func makeTemporaryDirectory(_ label: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "blobstream-zstd-\(label)-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func write(_ data: Data, in dir: String, as name: String) throws -> String {
        let path = dir + "/" + name
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test(
        "offsets of a file in frames enter their frame through the index: the same bytes, regular frames or not",
        arguments: [true, false])
    func sameBytes(regular: Bool) throws {
        let dir = try Self.makeTemporaryDirectory("zstidx")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.write(try Self.framed(regular: regular), in: dir, as: "a.zst")
        let index = try ZstdFrameIndex.build(fileAtPath: path)
        #expect(index.frames.frames.count == (regular ? 16 : 15), "\(index.frames.frames.count) frames")
        #expect(index.frames.isRegular == regular)
        #expect(index.frames.decompressedLength == Int64(Self.content.count))
        #expect(try ZstdFrameIndex(decoding: index.encoded(), name: "memory") == index)
        try index.write(toPath: ZstdFrameIndex.sidecar(of: path))
        #expect(try ZstdFrameIndex.read(indexFileAt: path + ".zstidx") == index)
        try index.check(againstFileAtPath: path)
        for offset in [0, 1, 200_000, 1_000_000, Self.content.count - 10] {
            let source = ZstdDataSource(upstream: FileDataSource(path: path), name: path, frameIndex: index)
            let got = readRange(source, at: Int64(offset), count: 5_000)
            let expected = Self.content[offset..<min(Self.content.count, offset + 5_000)]
            #expect(got.error == nil && got.data == expected, "at \(offset): \(String(describing: got.error))")
            #expect(source.seekTable == index.frames && source.seekTableNotUsed == nil)
        }
        // A whole read through the index, decoded in parallel when the frames are regular.
        let whole = ZstdDataSource(upstream: FileDataSource(path: path), name: path, parallelism: 2, frameIndex: index)
        let all = readRange(whole, at: 0, count: Self.content.count + 1)
        #expect(all.error == nil && all.data == Self.content)
        #expect((whole.framesDecodedInParallel > 0) == regular, "\(whole.framesDecodedInParallel)")
    }

    @Test(
        "zstd: of BlobSources finds FILE.zst.zstidx beside the file; a stale one is not used (why is said), a named one refused"
    )
    func foundBeside() throws {
        let dir = try Self.makeTemporaryDirectory("zstidx-beside")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.write(try Self.framed(regular: false), in: dir, as: "b.zst")
        let index = try ZstdFrameIndex.build(fileAtPath: path)
        try index.write(toPath: path + ".zstidx")
        let registry = BlobSources().makeRegistry()
        let url = "zstd:" + URL(fileURLWithPath: path).absoluteString
        let found = try #require(try registry.makeSource(url: url) as? ZstdDataSource)
        #expect(found.frameIndex == index && found.unusedIndexReason == nil)
        let got = readRange(found, at: 1_500_000, count: 1000)
        #expect(got.error == nil && got.data == Self.content[1_500_000..<1_501_000])
        // Touched: the same bytes, another time; the index is not used, and says why.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: path)
        let stale = try #require(try registry.makeSource(url: url) as? ZstdDataSource)
        #expect(stale.frameIndex == nil)
        #expect(stale.unusedIndexReason?.contains("modified") == true, "\(String(describing: stale.unusedIndexReason))")
        let slow = readRange(stale, at: 1_500_000, count: 1000)
        #expect(slow.error == nil && slow.data == Self.content[1_500_000..<1_501_000])
        let named = BlobSources(indexes: .named(path + ".zstidx", acceptsUnchecked: false)).makeRegistry()
        #expect(throws: BlobStreamError.self) { _ = try named.makeSource(url: url) }
    }

    @Test("a damaged index file is refused, naming it: cut, a byte flipped, no magic, another version")
    func damagedFile() throws {
        let dir = try Self.makeTemporaryDirectory("zstidx-damaged")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.write(try Self.framed(regular: true), in: dir, as: "c.zst")
        let bytes = try ZstdFrameIndex.build(fileAtPath: path).encoded()
        var flipped = bytes
        flipped[bytes.count / 2] ^= 0x10
        var magic = bytes
        magic[0] = UInt8(ascii: "X")
        var version = bytes
        version[8] = 9
        let table: [(String, [UInt8], BlobStreamError.Code)] = [
            ("cut", Array(bytes.prefix(bytes.count - 7)), .corrupt),
            ("empty", [], .corrupt),
            ("flipped", flipped, .corrupt),
            ("no magic", magic, .corrupt),
            ("version 9", version, .unsupported),
        ]
        for (what, damaged, code) in table {
            let file = dir + "/c.zst.zstidx"
            try Data(damaged).write(to: URL(fileURLWithPath: file))
            do {
                _ = try ZstdFrameIndex.read(indexFileAt: file)
                Issue.record("\(what): read")
            } catch {
                #expect(error.code == code && error.message.contains(file), "\(what): \(error)")
            }
            // Beside the file it is not used; the bytes are still right.
            let source = try #require(
                try BlobSources().makeRegistry().makeSource(url: "zstd:" + URL(fileURLWithPath: path).absoluteString)
                    as? ZstdDataSource)
            #expect(source.frameIndex == nil, "\(what)")
            let got = readRange(source, at: 2_000_000, count: 100)
            #expect(got.error == nil && got.data == Self.content[2_000_000..<2_000_100], "\(what)")
        }
    }

    @Test("an index that lies (bytes moved between frames, a checksum changed) never gives other bytes")
    func lyingIndex() throws {
        let dir = try Self.makeTemporaryDirectory("zstidx-lying")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.write(try Self.framed(regular: true), in: dir, as: "d.zst")
        let honest = try ZstdFrameIndex.build(fileAtPath: path)
        func lie(_ change: (inout [ZstdSeekTable.Frame]) -> Void) throws -> ZstdFrameIndex {
            var frames = honest.frames.frames
            change(&frames)
            return ZstdFrameIndex(frames: try #require(ZstdSeekTable.placing(frames)), identity: honest.identity)
        }
        let lies: [(String, ZstdFrameIndex)] = [
            (
                "4096 bytes moved from frame 5 to frame 4",
                try lie {
                    $0[4].decompressedSize += 4096
                    $0[5].decompressedSize -= 4096
                }
            ),
            ("frames 2 and 3 swapped", try lie { $0.swapAt(2, 3) }),
            ("frame 7's checksum", try lie { $0[7].checksum = $0[7].checksum.map { $0 ^ 1 } }),
        ]
        for (what, index) in lies {
            for offset in [300_000, 131_072 * 5 + 100, 131_072 * 7 + 5] {
                for parallelism in [1, 2] {
                    let source = ZstdDataSource(
                        upstream: FileDataSource(path: path), name: path, parallelism: parallelism, frameIndex: index)
                    let got = readRange(source, at: Int64(offset), count: 300_000)
                    let expected = Self.content[offset..<min(Self.content.count, offset + got.data.count)]
                    if let error = got.error {
                        #expect(error.code == .corrupt, "\(what) at \(offset): \(error)")
                    } else {
                        #expect(got.data.count == 300_000, "\(what) at \(offset): a short read, clean")
                    }
                    #expect(
                        got.error != nil || got.data == expected,
                        "\(what) at \(offset), parallelism \(parallelism): other bytes with a clean end")
                }
            }
        }
    }

    @Test("a file of one frame gets no index: refused, naming the file and ZstdSeekableCompressor")
    func oneFrame() throws {
        let dir = try Self.makeTemporaryDirectory("zstidx-one")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (file, _) = try seekable(Self.content, frameSize: 8 << 20)
        let path = try Self.write(file, in: dir, as: "one.zst")
        do {
            _ = try ZstdFrameIndex.build(fileAtPath: path)
            Issue.record("indexed")
        } catch {
            #expect(error.code == .unsupported && error.message.contains(path), "\(error)")
            #expect(error.message.contains("ZstdSeekableCompressor"), "\(error)")
        }
    }
}
