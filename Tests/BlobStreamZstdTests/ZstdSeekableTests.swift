import BlobStream
import BlobStreamTestSupport
import BlobStreamZstd
import Foundation
import SharedTestHelpers
import Testing

/// `bytes` compressed by `ZstdSeekableCompressor`, fed in pieces of `piece` bytes.
func seekable(_ bytes: Data, frameSize: Int, level: Int = 3, piece: Int = 10_000) throws -> (
    file: Data, table: ZstdSeekTable
) {
    let compressor = try ZstdSeekableCompressor(level: level, frameSize: frameSize)
    var file = Data()
    var at = 0
    while at < bytes.count {
        let end = min(at + piece, bytes.count)
        try bytes[at..<end].withUnsafeBytes { try compressor.append($0) { file.append(contentsOf: $0) } }
        at = end
    }
    try compressor.finish { file.append(contentsOf: $0) }
    return (file, compressor.seekTable)
}

/// What a stream over `source` reads at `offset`: up to `count` bytes, then on to the
/// source's next check point, as `cat --offset --length` does (`readOnToCheckPoint`); and
/// the error that stopped it.
func readRange(_ source: ZstdDataSource, at offset: Int64, count: Int) -> (data: Data, error: BlobStreamError?) {
    let stream = BlobInputStream(dataSource: source, mode: .synchronous)
    _ = stream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey)
    stream.open()
    defer { stream.close() }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while data.count < count {
        let n = stream.read(&buffer, maxLength: min(buffer.count, count - data.count))
        if n < 0 { return (data, (stream.streamError as? BlobStreamError)?.cause as? BlobStreamError) }
        if n == 0 { break }
        data.append(contentsOf: buffer[0..<n])
    }
    do {
        try stream.readOnToCheckPoint()
    } catch {
        return (data, (error.cause as? BlobStreamError) ?? error)
    }
    return (data, nil)
}

@Suite("zstd's seekable format: written, its table read, offsets entered at their frame")
struct ZstdSeekableTests {
    /// 2 MiB: text and random bytes in turn, so frames compress differently.
    static let content: Data = {
        var data = Data()
        for part in 0..<8 {
            data +=
                part.isMultiple(of: 2)
                ? TestBytes.text(262_144, seed: UInt64(part), words: ["seek", "table", "frame"], lineEvery: 60)
                : TestBytes.random(262_144, seed: UInt64(part))
        }
        return data
    }()
    static let frameSize = 65_536

    @Test("the compressor's file: frames of the frame size with checksums; zstd -d and the source read it whole")
    func written() throws {
        let (file, table) = try seekable(Self.content, frameSize: Self.frameSize)
        #expect(table.frames.count == 32 && table.hasChecksums && table.isRegular)
        #expect(table.decompressedLength == Int64(Self.content.count))
        #expect(table.frames.allSatisfy { $0.decompressedSize == Int64(Self.frameSize) })
        #expect(try zstd(["-d"], file) == Self.content, "zstd -d reads the file as one stream")
        for parallelism in [1, 2] {
            let source = zstdSource(file, chunkSize: 5000, parallelism: parallelism)
            let whole = readAll(source)
            #expect(whole.last == 0 && sha256(whole.data) == sha256(Self.content), "\(String(describing: whole.error))")
            // With 2 threads, every frame after the first whole one.
            #expect(source.framesDecodedInParallel == (parallelism == 1 ? 0 : 31))
        }
        // Lent (getBuffer) and read in turn, as `cat` does: the same bytes.
        let lending = zstdSource(file, chunkSize: 5000)
        let stream = BlobInputStream(dataSource: lending, mode: .synchronous)
        stream.open()
        var lentAndRead = Data()
        var lentCount = 0
        var scratch = [UInt8](repeating: 0, count: 30_000)
        while true {
            var lent: UnsafeMutablePointer<UInt8>?
            var count = 0
            if lentCount.isMultiple(of: 2), stream.getBuffer(&lent, length: &count), let lent {
                lentAndRead.append(lent, count: count)
                lentCount += 1
                continue
            }
            let n = stream.read(&scratch, maxLength: scratch.count)
            if n <= 0 {
                #expect(n == 0, "\(String(describing: stream.streamError))")
                break
            }
            lentAndRead.append(contentsOf: scratch[0..<n])
            lentCount += lentCount.isMultiple(of: 2) ? 0 : 1
        }
        stream.close()
        #expect(lentCount > 10 && sha256(lentAndRead) == sha256(Self.content), "\(lentCount) lent")
        let whole = readAll(zstdSource(file, chunkSize: 5000))
        #expect(whole.last == 0 && sha256(whole.data) == sha256(Self.content), "\(String(describing: whole.error))")

        let parsed = try file.suffix(ZstdSeekTable.footerSize).withUnsafeBytes {
            try ZstdSeekTable.tableFrameSize(footer: $0, fileLength: Int64(file.count), name: "t.zst")
        }
        let size = try #require(parsed)
        let read = try file.suffix(size).withUnsafeBytes {
            try ZstdSeekTable(tableFrame: $0, fileLength: Int64(file.count), name: "t.zst")
        }
        #expect(read == table)

        // A last frame shorter than the others; an empty input is a table alone.
        let odd = try seekable(Self.content.prefix(100_000), frameSize: 30_000)
        #expect(odd.table.frames.map(\.decompressedSize) == [30_000, 30_000, 30_000, 10_000] && odd.table.isRegular)
        #expect(try zstd(["-d"], odd.file) == Self.content.prefix(100_000))
        let empty = try seekable(Data(), frameSize: 1000)
        #expect(empty.table.frames.isEmpty && empty.file.count == 17)
        #expect(readAll(zstdSource(empty.file)).last == 0)
    }

    @Test(
        "offsets enter at their frame: the bytes at each, a few upstream reads for the last frame (1 and 2 threads)",
        arguments: [1, 2])
    func offsets(parallelism: Int) throws {
        let (file, table) = try seekable(Self.content, frameSize: Self.frameSize)
        let length = Int64(Self.content.count)
        let frame = Int64(Self.frameSize)
        // The footer and the table, then the frames that hold the range (and with 2 threads,
        // once a frame was read whole, up to 3 queued after it): never the frames before.
        let largest = Int(table.frames.map(\.compressedSize).max()!)
        let bound = (parallelism == 1 ? 2 : 4) * (largest / 4096 + 1) + 6
        for offset in [0, 1, frame - 1, frame, frame + 1, length / 2 + 7, length - 5000, length - 1, length] {
            let upstream = InMemoryDataSource(data: file, chunkSize: 4096)
            let source = ZstdDataSource(upstream: upstream, name: "t.zst", parallelism: parallelism)
            let (data, error) = readRange(source, at: offset, count: 3000)
            let expected = Self.content[Int(offset)..<Int(min(offset + 3000, length))]
            #expect(error == nil && data == expected, "offset \(offset): \(String(describing: error))")
            // The table is looked for at the first move (or at the end of a whole frame).
            #expect(source.seekTable == (offset == 0 ? nil : table), "offset \(offset)")
            // The footer, the table and the frames that hold the range: not the file.
            #expect(upstream.readCount <= bound, "offset \(offset): \(upstream.readCount) reads, over \(bound)")
        }

        // Back and forth on one stream.
        let source = zstdSource(file, chunkSize: 4096, parallelism: parallelism)
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 1000)
        for offset in [1_500_000, 70_000, 2_000_000, 3, 1_000_000] {
            try source.seek(to: Int64(offset))
            #expect(stream.read(&buffer, maxLength: 1000) == 1000)
            #expect(Data(buffer) == Self.content[offset..<offset + 1000], "offset \(offset)")
        }
        stream.close()
    }

    @Test("every byte of the table flipped: each offset reads its bytes or fails, never others")
    func damagedTable() throws {
        let (file, table) = try seekable(Self.content.prefix(300_000), frameSize: 40_000)
        let expected = Self.content.prefix(300_000)
        let tableStart = Int(table.compressedLength)
        var unused = 0
        var failed = 0
        var inParallel = 0
        for position in tableStart..<file.count {
            for mask: UInt8 in [0x01, 0x80] {
                var damaged = file
                damaged[position] ^= mask
                for (offset, parallelism, count) in [
                    (45_000, 1, 2000), (250_000, 2, 2000), (299_990, 1, 2000), (0, 2, 300_000), (79_000, 2, 90_000),
                ] {
                    let source = zstdSource(damaged, chunkSize: 3000, parallelism: parallelism)
                    let (data, error) = readRange(source, at: Int64(offset), count: count)
                    let want = expected[offset..<min(offset + count, expected.count)]
                    if let error {
                        failed += 1
                        #expect(error.code == .corrupt || error.code == .truncated, "\(error)")
                    } else {
                        #expect(data == want, "byte \(position) ^ \(mask), offset \(offset): other bytes")
                    }
                    if source.seekTableNotUsed != nil || source.seekTable == nil { unused += 1 }
                    inParallel += source.framesDecodedInParallel
                }
            }
        }
        // Most flips leave a table that does not add up or is not regular: not used.
        #expect(unused > (file.count - tableStart) * 5)
        #expect(failed > 0)
        #expect(inParallel > 0, "some reads went on in parallel")
    }

    @Test("every byte of a small file flipped: offsets through the table read their bytes or fail")
    func damagedFrames() throws {
        let content = Self.content.prefix(12_000)
        let (file, table) = try seekable(content, frameSize: 3000)
        #expect(table.frames.count == 4)
        for position in 0..<Int(table.compressedLength) {
            var damaged = file
            damaged[position] ^= 0x10
            for (offset, parallelism, count) in [
                (100, 1, 800), (6500, 1, 800), (11_000, 1, 800), (0, 2, 12_000), (2500, 2, 9000),
            ] {
                let (data, error) = readRange(
                    zstdSource(damaged, parallelism: parallelism), at: Int64(offset), count: count)
                let want = content[offset..<min(offset + count, content.count)]
                // An error may follow bytes that were wrong (the verified-prefix contract):
                // what must never be is a clean end after other bytes.
                if let error {
                    #expect(error.code == .corrupt || error.code == .truncated, "\(error)")
                } else {
                    #expect(data == want, "byte \(position), offset \(offset): other bytes")
                }
            }
        }
    }

    @Test("frames of different sizes: offsets decode from the start (right bytes) and say why")
    func irregular() throws {
        let parts = [Self.content.prefix(10_000), Self.content[10_000..<50_000], Self.content[50_000..<60_000]]
        var file = Data()
        var sizes: [(compressed: UInt32, decompressed: UInt32, checksum: UInt32?)] = []
        for part in parts {
            let frame = try zstd(["-3"], Data(part))
            sizes.append((UInt32(frame.count), UInt32(part.count), nil))
            file += frame
        }
        file += ZstdSeekTable(sizes: sizes).encoded()
        let source = zstdSource(file)
        let (data, error) = readRange(source, at: 55_000, count: 1000)
        #expect(error == nil && data == Self.content[55_000..<56_000])
        #expect(source.seekTable?.isRegular == false)
        #expect(source.seekTableNotUsed?.contains("not all the same size") == true)
    }

    @Test("tables that do not add up, and compressor settings out of range: errors that say which")
    func badTables() throws {
        func footer(count: UInt32, descriptor: UInt8, magic: UInt32 = ZstdSeekTable.seekableMagic) -> Data {
            var bytes = Data()
            withUnsafeBytes(of: count.littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(descriptor)
            withUnsafeBytes(of: magic.littleEndian) { bytes.append(contentsOf: $0) }
            return bytes
        }
        func size(_ footer: Data, length: Int64) throws -> Int? {
            try footer.withUnsafeBytes {
                try ZstdSeekTable.tableFrameSize(footer: $0, fileLength: length, name: "t.zst")
            }
        }
        #expect(try size(footer(count: 2, descriptor: 0x80), length: 1000) == 8 + 24 + 9)
        #expect(try size(footer(count: 2, descriptor: 0, magic: 0x1234), length: 1000) == nil)
        #expect(throws: BlobStreamError.self) { try size(footer(count: 1, descriptor: 0x40), length: 1000) }
        #expect(throws: BlobStreamError.self) { try size(footer(count: 1000, descriptor: 0), length: 1000) }
        #expect(throws: BlobStreamError.self) {
            try size(footer(count: 0xFFFF_FFFF, descriptor: 0x80), length: 1 << 40)
        }

        let (file, table) = try seekable(Self.content.prefix(5000), frameSize: 2000)
        let frame = Data(file.suffix(table.encoded().count))
        func parse(_ bytes: Data, length: Int64) throws(BlobStreamError) {
            _ = try bytes.withUnsafeBytes { bytes in
                Result { () throws(BlobStreamError) in
                    try ZstdSeekTable(tableFrame: bytes, fileLength: length, name: "t.zst")
                }
            }.get()
        }
        try parse(frame, length: Int64(file.count))
        for (what, bytes, length, needle) in [
            ("a longer file", frame, Int64(file.count) + 1, "add up"),
            ("another magic", Data([0x5F]) + frame.dropFirst(), Int64(file.count), "magic"),
            (
                "a frame size off by one", frame.prefix(4) + Data([frame[4] &+ 1]) + frame.dropFirst(5),
                Int64(file.count), "announces"
            ),
        ] {
            do {
                try parse(bytes, length: length)
                Issue.record("\(what): parsed")
            } catch {
                #expect(
                    error.code == .corrupt && error.message.contains(needle) && error.message.contains("t.zst"),
                    "\(what): \(error)")
            }
        }
        #expect(throws: BlobStreamError.self) { try ZstdSeekableCompressor(frameSize: 0) }
        #expect(throws: BlobStreamError.self) { try ZstdSeekableCompressor(level: 100) }
    }

    @Test("the compressing source: the compressor's bytes over sync and async upstreams; a failing upstream fails it")
    func compressingSource() throws {
        let content = Data(Self.content.prefix(700_000))
        let expected = try seekable(content, frameSize: 100_000).file
        let failingAt = 350_000
        let sync = SourceConformance.check(
            expected: expected,
            failing: {
                try! ZstdSeekableCompressingSource(
                    upstream: InMemoryDataSource(
                        data: content, failAt: (failingAt, BlobStreamError(.ioFailed, "disk gone"))),
                    frameSize: 100_000)
            }
        ) {
            try! ZstdSeekableCompressingSource(
                upstream: InMemoryDataSource(data: content, chunkSize: 7000), frameSize: 100_000)
        }
        #expect(sync.isEmpty, "\(sync)")
        let queue = DispatchQueue(label: "zstd-compress-slow-upstream")
        let async = SourceConformance.check(expected: expected) {
            try! ZstdSeekableCompressingSource(
                upstream: InMemoryDataSource(
                    data: content, open: .async(queue: queue, delay: 0.01), chunkSize: 20_000,
                    refillDelay: (queue: queue, delay: 0.0001)),
                frameSize: 100_000)
        }
        #expect(async.isEmpty, "\(async)")

        // Read back through the seek table, and a failure named.
        let source = try ZstdSeekableCompressingSource(upstream: InMemoryDataSource(data: content), frameSize: 100_000)
        let made = readAll(source)
        #expect(made.last == 0 && made.data == expected)
        #expect(source.seekTable.frames.count == 7 && source.seekTable.isRegular)
        let back = readRange(zstdSource(made.data), at: 650_000, count: 10_000)
        #expect(back.error == nil && back.data == content[650_000..<660_000])
        let broken = readAll(
            try ZstdSeekableCompressingSource(
                upstream: InMemoryDataSource(
                    data: content, failAt: (failingAt, BlobStreamError(.ioFailed, "disk gone"))),
                frameSize: 100_000))
        #expect(broken.last == -1)
        #expect(
            broken.error?.code == .ioFailed && broken.error?.message.contains("offset 350000") == true,
            "\(String(describing: broken.error))")
    }

    @Test("pyzstd's SeekableZstdFile file: its table is found and regular; offsets decode one frame")
    func pyzstdFile() async throws {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts")
        let content = Data(Self.content.prefix(1_000_000))
        let file = try await offPool {
            let python = try String(decoding: run(scripts.appendingPathComponent("zstd-venv").path, []), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let script = """
                import sys, pyzstd
                with pyzstd.SeekableZstdFile(sys.stdout.buffer, "w", max_frame_content_size=65536) as o:
                    o.write(sys.stdin.buffer.read())
                """
            return try run(python, ["-c", script], input: content)
        }
        for offset in [70_000, 500_000, 999_000] {
            let upstream = InMemoryDataSource(data: file, chunkSize: 4096)
            let source = ZstdDataSource(upstream: upstream, name: "pyzstd.zst", parallelism: 1)
            let (data, error) = readRange(source, at: Int64(offset), count: 1000)
            #expect(error == nil && data == content[offset..<offset + 1000], "offset \(offset)")
            let table = try #require(source.seekTable)
            #expect(table.isRegular && table.frames.count == 16 && source.seekTableNotUsed == nil)
            let largest = Int(table.frames.map(\.compressedSize).max()!)
            #expect(upstream.readCount <= 2 * (largest / 4096 + 1) + 6, "offset \(offset): \(upstream.readCount) reads")
        }
    }
}

/// `work` on a thread of its own, off the cooperative pool the tests share.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// `executable ARGUMENTS` with `input` on its stdin: its stdout; throws when it fails.
func run(_ executable: String, _ arguments: [String], input: Data = Data()) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let stdin = Pipe()
    let stdout = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    try process.run()
    Thread {
        stdin.fileHandleForWriting.write(input)
        try? stdin.fileHandleForWriting.close()
    }.start()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw TestFailure("\(executable) exited with \(process.terminationStatus)")
    }
    return output
}
