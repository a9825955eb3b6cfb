import BlobStream
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// A way to damage a gzip file of three members, and where.
struct GzipDamage: CustomStringConvertible, Sendable {
    let description: String
    let apply: @Sendable (MultiMember) -> Data

    static let table: [GzipDamage] = [
        GzipDamage(description: "empty file") { _ in Data() },
        GzipDamage(description: "cut inside the first header") { $0.gz.prefix(5) },
        GzipDamage(description: "cut inside the first member's deflate data") {
            $0.gz.prefix($0.compressedStarts[1] / 2)
        },
        GzipDamage(description: "cut inside the second (stored) member") {
            $0.gz.prefix(($0.compressedStarts[1] + $0.compressedStarts[2]) / 2)
        },
        GzipDamage(description: "cut inside the last trailer") { $0.gz.prefix($0.gz.count - 3) },
        GzipDamage(description: "cut just before the last trailer") { $0.gz.prefix($0.gz.count - 8) },
        GzipDamage(description: "first member's CRC-32 flipped") { flip($0.gz, at: $0.compressedStarts[1] - 8) },
        GzipDamage(description: "first member's ISIZE changed") { flip($0.gz, at: $0.compressedStarts[1] - 2) },
        GzipDamage(description: "last member's CRC-32 flipped") { flip($0.gz, at: $0.gz.count - 5) },
        GzipDamage(description: "a byte of the stored member changed (only the CRC-32 can see it)") {
            flip($0.gz, at: ($0.compressedStarts[1] + $0.compressedStarts[2]) / 2)
        },
        GzipDamage(description: "a byte in the first member's deflate data changed") {
            flip($0.gz, at: $0.compressedStarts[1] / 3)
        },
        GzipDamage(description: "the second member's magic changed") { flip($0.gz, at: $0.compressedStarts[1]) },
        GzipDamage(description: "the first header's method is not deflate") { flip($0.gz, at: 2) },
        GzipDamage(description: "garbage after the last member") { $0.gz + Data([0x42, 0x43]) },
        GzipDamage(description: "garbage after zero padding") { $0.gz + Data([0, 0, 0, 7]) },
    ]

    private static func flip(_ data: Data, at position: Int) -> Data {
        var copy = data
        copy[position] ^= 0x5A
        return copy
    }
}

@Suite("Gzip index built by ISA-L and by zlib") struct GzipIndexEngineTests {
    let input: MultiMember

    init() throws { input = try MultiMember.shared.get() }

    @Test(
        "both engines' indexes read the plain decode's bytes at every seek point and between",
        arguments: [64 << 10, 256 << 10])
    func sameBytesEverywhere(spacing: Int) throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let isal = try GzipIndex.build(fileAtPath: path, spacing: spacing, engine: .isal)
        let zlib = try GzipIndex.build(fileAtPath: path, spacing: spacing, engine: .zlib)
        #expect(isal.uncompressedSize == zlib.uncompressedSize)
        #expect(isal.compressedSize == zlib.compressedSize)
        #expect(isal.identity == zlib.identity)
        // Both start a point at every member and space their windowed points.
        #expect(isal.points.filter { $0.window == nil }.map(\.uncompressedOffset) == input.plainStarts.map(Int64.init))
        let windowed = isal.points.filter { $0.window != nil }.map(\.uncompressedOffset)
        // ISA-L passes over a block boundary whose header fits in its small input: fewer
        // points than zlib's on very compressible text, never none.
        let zlibWindowed = zlib.points.filter { $0.window != nil }.count
        #expect(windowed.count * 3 >= zlibWindowed, "ISA-L \(windowed.count), zlib \(zlibWindowed) windowed points")
        #expect(windowed.count >= input.plain.count / spacing / 8)
        #expect(zip(windowed, windowed.dropFirst()).allSatisfy { $1 - $0 >= spacing })
        for (i, point) in isal.points.enumerated() {
            let end = i + 1 < isal.points.count ? Int(isal.points[i + 1].uncompressedOffset) : input.plain.count
            #expect(point.chunkCRC32 == crc32(input.plain[Int(point.uncompressedOffset)..<end]), "chunk \(i)")
        }
        // Every point of either index, a byte after it, and a few offsets between.
        var offsets = Set((isal.points + zlib.points).flatMap { [$0.uncompressedOffset, $0.uncompressedOffset + 1] })
        for k in 0..<8 { offsets.insert(Int64(k * input.plain.count / 8 + 12_345)) }
        for offset in offsets.sorted() where offset < input.plain.count {
            for (which, index) in [("isal", isal), ("zlib", zlib)] {
                let (bytes, error) = readIndexed(path: path, index: index, at: offset, count: 70_000)
                #expect(error == nil, "\(which) at \(offset): \(String(describing: error))")
                let expected = input.plain[Int(offset)..<min(input.plain.count, Int(offset) + 70_000)]
                #expect(bytes == expected, "\(which) at \(offset)")
            }
        }
        // The whole file through the ISA-L-built index, from the start.
        let (all, error) = readIndexed(path: path, index: isal, at: 0)
        #expect(error == nil)
        #expect(sha256(all) == sha256(input.plain))
    }

    @Test("blocks of ordinary size (about 70 KB of output each): ISA-L's hunts find about as many points as zlib")
    func isalFindsBlockStarts() throws {
        // Bytes from 48 letters: dynamic blocks of about 50 KB of compressed data, so a hunt's
        // first look-ahead (4 KiB of input) passes a block start now and then, and its closer
        // looks must find it.
        let plain = Data(randomBytes(3 << 20, seed: 5).map { 0x30 + $0 % 48 })
        let gz = try Gzip.compress(plain)
        let folder = try IndexTestFolder()
        let path = try folder.write("blocks.gz", gz)
        let spacing = 64 << 10
        let isal = try GzipIndex.build(fileAtPath: path, spacing: spacing, engine: .isal)
        let zlib = try GzipIndex.build(fileAtPath: path, spacing: spacing, engine: .zlib)
        let isalPoints = isal.points.map(\.uncompressedOffset)
        let zlibPoints = zlib.points.map(\.uncompressedOffset)
        #expect(zlibPoints.count * 4 >= plain.count / spacing * 3)
        // zlib places a point at the first block start past the spacing; ISA-L at that one or,
        // when the header fit in one small input, at a later one. A hunt that could not tell
        // a block start in its look-ahead would give up (its budget spent) and leave few.
        #expect(isalPoints.count * 4 >= zlibPoints.count * 3, "ISA-L \(isalPoints.count), zlib \(zlibPoints.count)")
        #expect(
            zip(isal.points, isal.points.dropFirst()).allSatisfy {
                $1.uncompressedOffset - $0.uncompressedOffset >= spacing
            })
        for offset in stride(from: 0, to: plain.count, by: 300_007) {
            let (bytes, error) = readIndexed(path: path, index: isal, at: Int64(offset), count: 40_000)
            #expect(error == nil)
            #expect(bytes == plain[offset..<min(plain.count, offset + 40_000)], "at \(offset)")
        }
    }

    @Test("both engines refuse the same damaged files, with the same kind of error", arguments: GzipDamage.table)
    func sameRefusals(_ damage: GzipDamage) throws {
        let damaged = damage.apply(input)
        var codes: [String: BlobStreamError.Code] = [:]
        for engine in [InflateEngine.isal, .zlib] {
            do {
                let index = try GzipIndex.build(
                    from: InMemoryDataSource(data: damaged), spacing: 128 << 10, name: "bad.gz", engine: engine)
                Issue.record("\(engine) built an index of \(index.points.count) points over a damaged file")
            } catch {
                #expect(error.message.contains("bad.gz"), "\(engine): \(error.message)")
                codes[engine.rawValue] = error.code
            }
        }
        #expect(codes["isal"] != nil && codes["isal"] == codes["zlib"], "\(codes)")
    }

    @Test("every uncompressed byte is handed over in order while the index is built, by both engines")
    func handsOverTheBytes() throws {
        for engine in [InflateEngine.isal, .zlib] {
            var seen = Data()
            let index = try GzipIndex.build(
                from: InMemoryDataSource(data: input.gz), spacing: 256 << 10, name: "m.gz", engine: engine,
                onOutput: { seen.append(contentsOf: $0) })
            #expect(seen == input.plain, "\(engine)")
            #expect(index.uncompressedSize == Int64(input.plain.count))
        }
    }

    @Test("an error the receiver of the bytes throws ends the build with it")
    func receiverErrorEndsTheBuild() throws {
        for engine in [InflateEngine.isal, .zlib] {
            var calls = 0
            let error = #expect(throws: BlobStreamError.self) {
                try GzipIndex.build(
                    from: InMemoryDataSource(data: input.gz), spacing: 256 << 10, name: "m.gz", engine: engine,
                    onOutput: { (_: UnsafeRawBufferPointer) throws(BlobStreamError) in
                        calls += 1
                        if calls == 3 { throw BlobStreamError(.ioFailed, "stop here") }
                    })
            }
            #expect(error?.message == "stop here", "\(engine)")
            #expect(calls == 3, "\(engine)")
        }
    }

    @Test("an ISA-L-built index written to disk reads back equal and is used for the file")
    func isalIndexRoundTrip() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10, engine: .isal)
        let indexPath = folder.path("m.gz.gzidx")
        try index.write(toPath: indexPath)
        guard case .matching(let loaded) = try GzipIndex.lookUp(forFileAtPath: path, indexPath: indexPath) else {
            Issue.record("the written index does not match its file")
            return
        }
        #expect(loaded == index)
    }

    @Test("reading an index file: a missing one is .notFound, an empty or cut one .corrupt, each naming the path")
    func readingIndexFiles() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let bytes = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10).serialized()
        let missing = folder.path("missing.gzidx")
        let error = #expect(throws: BlobStreamError.self) { try GzipIndex.read(fromPath: missing) }
        #expect(error?.code == .notFound)
        #expect(error?.message.contains(missing) == true)
        for (name, cut) in [("empty.gzidx", 0), ("cut.gzidx", bytes.count - 40_000), ("short.gzidx", bytes.count - 1)] {
            let file = try folder.write(name, Data(bytes.prefix(cut)))
            let error = #expect(throws: BlobStreamError.self) { try GzipIndex.read(fromPath: file) }
            #expect(error?.code == .corrupt, "\(name)")
            #expect(error?.message.contains(file) == true, "\(name)")
        }
        let whole = try folder.write("whole.gzidx", Data(bytes))
        #expect(try GzipIndex.read(fromPath: whole).serialized() == bytes)
    }

    @Test("fixed-Huffman blocks (whose boundaries ISA-L's builder cannot see): the index is built, and reads right")
    func fixedHuffmanBlocks() throws {
        let plain = textBytes(700_000, seed: 11)
        let gz = fixedHuffmanGzip(plain, blockSize: 10_000)
        #expect(try Gzip.decompress(gz) == plain) // gzip itself agrees the file is valid
        let folder = try IndexTestFolder()
        let path = try folder.write("fixed.gz", gz)
        let zlib = try GzipIndex.build(fileAtPath: path, spacing: 32 << 10, engine: .zlib)
        let isal = try GzipIndex.build(fileAtPath: path, spacing: 32 << 10, engine: .isal)
        #expect(zlib.points.count > 15)
        #expect(isal.uncompressedSize == Int64(plain.count))
        for offset in stride(from: 0, to: plain.count, by: 97_001) {
            let (bytes, error) = readIndexed(path: path, index: isal, at: Int64(offset), count: 50_000)
            #expect(error == nil)
            #expect(bytes == plain[offset..<min(plain.count, offset + 50_000)], "at \(offset)")
        }
    }
}

/// A gzip file whose deflate data is fixed-Huffman blocks of literals only (RFC 1951 3.2.6),
/// `blockSize` bytes each: a header of 3 bits per block.
func fixedHuffmanGzip(_ plain: Data, blockSize: Int) -> Data {
    var out = Data([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3])
    var bits: UInt64 = 0
    var count = 0
    func put(_ value: UInt64, _ length: Int) {
        bits |= value << count
        count += length
        while count >= 8 {
            out.append(UInt8(truncatingIfNeeded: bits))
            bits >>= 8
            count -= 8
        }
    }
    func putCode(_ code: UInt64, _ length: Int) { // Huffman codes go most significant bit first
        var reversed: UInt64 = 0
        for i in 0..<length where code & (1 << i) != 0 { reversed |= 1 << (length - 1 - i) }
        put(reversed, length)
    }
    var start = 0
    repeat {
        let end = min(plain.count, start + blockSize)
        put(end == plain.count ? 1 : 0, 1) // BFINAL
        put(1, 2) // BTYPE 01: fixed Huffman
        for byte in plain[start..<end] {
            if byte < 144 { putCode(0x30 + UInt64(byte), 8) } else { putCode(0x190 + UInt64(byte) - 144, 9) }
        }
        putCode(0, 7) // end of block
        start = end
    } while start < plain.count
    if count > 0 { put(0, 8 - count) }
    let crc = crc32(plain)
    let size = UInt32(truncatingIfNeeded: plain.count)
    for v in [crc, size] { for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * i))) } }
    return out
}
