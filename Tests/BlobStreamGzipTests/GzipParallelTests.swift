import BlobStream
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// Test files for parallel decoding, each with its plain bytes.
struct ParallelCase: Sendable, CustomTestStringConvertible {
    let name: String
    let plain: Data
    let gz: Data
    var testDescription: String { name }

    /// Three members (text, random, text: 6 MiB), one member mixing text and random (9 MiB),
    /// forty members of 1 byte to 600 KiB (one empty), level 1.
    static let all = Result { () throws -> [ParallelCase] in
        let multi = try MultiMember.shared.get()
        var mixed = Data()
        for i in 0..<9 {
            mixed += i % 3 == 1 ? randomBytes(1 << 20, seed: UInt64(20 + i)) : textBytes(1 << 20, seed: UInt64(i))
        }
        var manyPlain = Data()
        var manyGz = Data()
        for i in 0..<40 {
            let part = textBytes(i == 7 ? 0 : (i * 15_013) % 600_000 + 1, seed: UInt64(100 + i))
            manyPlain += part
            manyGz += try Gzip.compress(part, level: 1)
        }
        return [
            ParallelCase(name: "three members", plain: multi.plain, gz: multi.gz),
            ParallelCase(name: "one mixed member", plain: mixed, gz: try Gzip.compress(mixed)),
            ParallelCase(name: "forty members", plain: manyPlain, gz: manyGz),
        ]
    }
}

/// Reads the whole of `path` from `offset` with `index` and `parallelism`, through a
/// synchronous stream; the bytes and the source's error.
func readParallel(
    path: String, index: GzipIndex, parallelism: Int, at offset: Int64 = 0, readSize: Int = 100_000,
    engine: InflateEngine = .automatic
) -> (Data, BlobStreamError?) {
    let source = GzipDataSource(
        upstream: FileDataSource(path: path), name: path, index: index, engine: engine, parallelism: parallelism)
    let drained = drainSync(source, size: readSize, offset: offset == 0 ? nil : Int(offset))
    return (drained.data, drained.last < 0 ? drained.error ?? BlobStreamError(.sourceFailed, "no error") : nil)
}

/// The engines available here (the parallel workers use ISA-L's raw inflate or zlib's).
let parallelEngines: [InflateEngine] = InflateEngine.isIsalAvailable ? [.zlib, .isal] : [.zlib]

@Suite("Gzip parallel decoding") struct GzipParallelTests {
    @Test(
        "with an index, every parallelism and engine gives the plain decode's bytes from any offset",
        arguments: [64 << 10, 512 << 10, 2 << 20], parallelEngines)
    func bytesEqualPlainDecode(spacing: Int, engine: InflateEngine) throws {
        let folder = try IndexTestFolder()
        for file in try ParallelCase.all.get() {
            let path = try folder.write("f.gz", file.gz)
            let index = try GzipIndex.build(fileAtPath: path, spacing: spacing)
            let count = file.plain.count
            for parallelism in 1...4 {
                for offset in [0, 1, 777_777, count / 2, count - 5, count] {
                    let (bytes, error) = readParallel(
                        path: path, index: index, parallelism: parallelism, at: Int64(offset),
                        readSize: 1000 + offset % 200_000, engine: engine)
                    #expect(error == nil, "\(file.name) p\(parallelism) @\(offset): \(String(describing: error))")
                    #expect(
                        sha256(bytes) == sha256(file.plain[offset...]),
                        "\(file.name) spacing \(spacing) parallelism \(parallelism) offset \(offset)")
                }
            }
        }
    }

    @Test("seeks back and forth within one open give the right bytes", arguments: [2, 3])
    func seeksWithinOneOpen(parallelism: Int) throws {
        let folder = try IndexTestFolder()
        let file = try ParallelCase.all.get()[1]
        let path = try folder.write("f.gz", file.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10)
        let source = GzipDataSource(
            upstream: FileDataSource(path: path), name: path, index: index, parallelism: parallelism)
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 300_000)
        for offset in [8_000_000, 5, 4_500_000, 4_500_100, 9_000_000, 0, 6_300_000] {
            try stream.seek(to: Int64(offset))
            var got = Data()
            let want = min(300_000, file.plain.count - offset)
            while got.count < want {
                let n = stream.read(&buffer, maxLength: want - got.count)
                try #require(n > 0, "offset \(offset)")
                got.append(contentsOf: buffer[0..<n])
            }
            #expect(got == file.plain[offset..<offset + want], "offset \(offset)")
        }
    }

    @Test(
        "a corrupt chunk is an error naming its offsets, and none of its bytes (or later ones) is delivered",
        arguments: parallelEngines)
    func corruptChunk(engine: InflateEngine) throws {
        let folder = try IndexTestFolder()
        let input = try MultiMember.shared.get()
        let path = try folder.write("m.gz", input.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10)
        // A byte in the middle of the random member (stored blocks: zlib cannot see it).
        let position = Int64((input.compressedStarts[1] + input.compressedStarts[2]) / 2)
        var damaged = input.gz
        damaged[Int(position)] ^= 0x55
        let copy = try folder.write("copy.gz", damaged)
        let chunk = try #require(index.points.lastIndex { $0.compressedOffset <= position })
        let chunkStart = index.points[chunk].uncompressedOffset
        for parallelism in 2...4 {
            for offset in [Int64(0), chunkStart - 1000, chunkStart + 10] {
                let (bytes, error) = readParallel(
                    path: copy, index: index, parallelism: parallelism, at: offset, engine: engine)
                let failure = try #require(error, "parallelism \(parallelism) offset \(offset)")
                #expect(failure.code == .changed)
                #expect(failure.message.contains("CRC-32"))
                #expect(failure.message.contains(copy))
                #expect(failure.message.contains("\(chunkStart)..<"), "\(failure.message)")
                #expect(
                    Int64(bytes.count) <= max(0, chunkStart - offset), "parallelism \(parallelism) offset \(offset)")
                #expect(bytes == input.plain[Int(offset)..<Int(offset) + bytes.count])
            }
        }
    }

    @Test(
        "a bad member trailer (CRC-32 or ISIZE) is an error when the member ends inside the read",
        arguments: parallelEngines)
    func badTrailer(engine: InflateEngine) throws {
        let folder = try IndexTestFolder()
        let input = try MultiMember.shared.get()
        let path = try folder.write("m.gz", input.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10)
        for (name, position) in [("CRC-32", input.compressedStarts[1] - 8), ("ISIZE", input.compressedStarts[2] - 2)] {
            var damaged = input.gz
            damaged[position] ^= 0x01
            let copy = try folder.write("bad-\(name).gz", damaged)
            for parallelism in [2, 4] {
                let (bytes, error) = readParallel(path: copy, index: index, parallelism: parallelism, engine: engine)
                let failure = try #require(error, "\(name) parallelism \(parallelism)")
                #expect(failure.code == .corrupt, "\(failure)")
                #expect(failure.message.contains(name), "\(failure.message)")
                #expect(bytes.count < input.plain.count)
                #expect(bytes == input.plain.prefix(bytes.count))
            }
        }
    }

    @Test("an index of another length is refused; a file shorter than its index is an error")
    func wrongFile() throws {
        let folder = try IndexTestFolder()
        let input = try MultiMember.shared.get()
        let path = try folder.write("m.gz", input.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 << 10)
        let short = try folder.write("short.gz", input.gz.prefix(input.gz.count - 100_000))
        let (bytes, error) = readParallel(path: short, index: index, parallelism: 2, at: 4_000_000)
        let failure = try #require(error)
        #expect(failure.code == .invalidOffset || failure.code == .changed, "\(failure)")
        #expect(failure.message.contains(short))
        #expect(bytes.isEmpty)
    }

    @Test("closing the stream from another thread while the workers run ends the read, without a hang")
    func closeWhileDecoding() throws {
        let folder = try IndexTestFolder()
        let file = try ParallelCase.all.get()[1]
        let path = try folder.write("f.gz", file.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 128 << 10)
        for round in 0..<12 {
            let source = GzipDataSource(upstream: FileDataSource(path: path), name: path, index: index, parallelism: 4)
            let stream = BlobInputStream(dataSource: source, mode: .synchronous)
            stream.open()
            var buffer = [UInt8](repeating: 0, count: 50_000)
            var got = Data()
            let first = stream.read(&buffer, maxLength: buffer.count)
            try #require(first > 0)
            got.append(contentsOf: buffer[0..<first])
            let handoff = Handoff(value: stream)
            let closed = DispatchSemaphore(value: 0)
            let closer = Thread {
                // The point of the round: close at a different moment of the decoding each time.
                usleep(UInt32(round * 700))
                handoff.value.close()
                closed.signal()
            }
            closer.start()
            var last = 1
            while last > 0 {
                last = stream.read(&buffer, maxLength: buffer.count)
                if last > 0 { got.append(contentsOf: buffer[0..<last]) }
            }
            // Ended by the close (or, rarely, at the real end): what came is the true prefix.
            #expect(got == file.plain.prefix(got.count), "round \(round)")
            if last == 0 { #expect(got.count == file.plain.count) }
            #expect(closed.wait(timeout: .now() + 10) == .success, "round \(round): close() did not return")
        }
    }
}
