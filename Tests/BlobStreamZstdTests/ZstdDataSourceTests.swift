import BlobStream
import BlobStreamFiles
import BlobStreamSources
import BlobStreamTestSupport
import BlobStreamZstd
import Foundation
import SharedTestHelpers
import Testing

/// The `zstd` program on `input` with `arguments` (stdin to stdout): its output.
func zstd(_ arguments: [String], _ input: Data) throws -> Data {
    try run("/usr/bin/env", ["zstd", "-q", "-c"] + arguments, input: input)
}

/// A skippable frame (magic 0x184D2A5n, a 4-byte little-endian size, that many bytes).
func skippableFrame(_ payload: Data, nibble: UInt8 = 0xE) -> Data {
    var frame = Data([0x50 | nibble, 0x2A, 0x4D, 0x18])
    withUnsafeBytes(of: UInt32(payload.count).littleEndian) { frame.append(contentsOf: $0) }
    return frame + payload
}

/// What reading a zstd source to its end gave.
struct ZstdRead {
    var data: Data
    /// 0 for a clean end, −1 for an error.
    var last: Int
    var error: BlobStreamError?
}

/// Reads `source` to its end through a synchronous stream, in reads of `size`.
func readAll(_ source: any BlobDataSource, size: Int = 65_536, offset: Int64? = nil) -> ZstdRead {
    let stream = BlobInputStream(dataSource: source, mode: .synchronous)
    if let offset { _ = stream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey) }
    stream.open()
    let (data, last) = stream.readToEnd(chunkSize: size)
    let error = (stream.streamError as? BlobStreamError)?.cause as? BlobStreamError
    stream.close()
    return ZstdRead(data: data, last: last, error: error)
}

func zstdSource(
    _ bytes: Data, chunkSize: Int = .max, windowLog: Int = ZstdWindow.defaultLog, parallelism: Int = 2
) -> ZstdDataSource {
    ZstdDataSource(
        upstream: InMemoryDataSource(data: bytes, chunkSize: chunkSize), name: "test.zst", windowLog: windowLog,
        parallelism: parallelism)
}

@Suite("zstd: frames decoded, checked and refused")
struct ZstdDataSourceTests {
    static let text = TestBytes.text(
        300_000, seed: 40, words: ["zstd", "frame", "window", "checksum", "block", "the", "a", "offset"],
        lineEvery: 80)

    @Test("one frame, levels 1 to 19, small and large reads: the bytes zstd was given (sha256)")
    func roundTrip() throws {
        for level in [1, 3, 19] {
            let compressed = try zstd(["-\(level)"], Self.text)
            for size in [1, 7, 4096, 1 << 20] {
                let read = readAll(zstdSource(compressed, chunkSize: 1000), size: size)
                #expect(read.last == 0, "level \(level), reads of \(size): \(String(describing: read.error))")
                #expect(sha256(read.data) == sha256(Self.text), "level \(level), reads of \(size)")
            }
        }
    }

    @Test("concatenated frames, skippable frames between and around them, an empty frame: one stream")
    func framesInTurn() throws {
        let parts = [Self.text.prefix(1000), Data(), Self.text.dropFirst(1000).prefix(100_000), Data("end".utf8)]
        var file = skippableFrame(Data("a seek table, say".utf8))
        for part in parts {
            file += try zstd(["-3"], Data(part))
            file += skippableFrame(Data(), nibble: 0x0)
        }
        let read = readAll(zstdSource(file, chunkSize: 333), size: 5000)
        #expect(read.last == 0, "\(String(describing: read.error))")
        #expect(read.data == parts.reduce(Data(), +))
    }

    @Test("a frame whose window is over the limit: refused naming its size and --long; read with windowLog")
    func windowLimit() throws {
        // Through a pipe (no size known), --long=28 asks for a 256 MiB window whatever the input.
        let compressed = try zstd(["-3", "--long=28"], Data(Self.text.prefix(50_000)))
        let refused = readAll(zstdSource(compressed))
        #expect(refused.last == -1)
        #expect(refused.error?.code == .unsupported)
        #expect(
            refused.error?.message.contains("needs a window of 268435456 bytes (2^28)") == true
                && refused.error?.message.contains("--long=28") == true
                && refused.error?.message.contains("test.zst")
                    == true,
            "\(String(describing: refused.error))")
        let allowed = readAll(zstdSource(compressed, windowLog: 28))
        #expect(allowed.last == 0 && allowed.data == Self.text.prefix(50_000))
    }

    @Test("empty input, a cut header, a cut frame, bytes after the last frame, not zstd: errors naming the offset")
    func badInputs() throws {
        let good = try zstd(["-3"], Data(Self.text.prefix(20_000)))
        let cases: [(String, Data, BlobStreamError.Code, String)] = [
            ("empty", Data(), .truncated, "the input is empty"),
            ("cut magic", good.prefix(3), .truncated, "inside a frame header at compressed offset 0"),
            ("cut header 5", good.prefix(5), .truncated, "inside a frame header at compressed offset 0"),
            ("cut frame", good.prefix(good.count - 1), .truncated, "inside the frame that starts at 0"),
            ("cut frame half", good.prefix(good.count / 2), .truncated, "inside the frame that starts at 0"),
            ("trailing junk", good + Data("junk".utf8), .corrupt, "at compressed offset \(good.count)"),
            ("trailing zeros", good + Data(count: 16), .corrupt, "at compressed offset \(good.count)"),
            ("gzip", Data([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3]), .corrupt, "not zstd data at compressed offset 0"),
        ]
        for (label, bytes, code, words) in cases {
            let read = readAll(zstdSource(bytes))
            #expect(read.last == -1, "\(label): a clean end")
            #expect(read.error?.code == code, "\(label): \(String(describing: read.error))")
            #expect(
                read.error?.message.contains(words) == true && read.error?.message.contains("test.zst") == true,
                "\(label): \(String(describing: read.error))")
        }
    }

    @Test("every byte flipped, every prefix: never a clean end with other bytes (frames with checksums)")
    func flipAndTruncationSweep() throws {
        let payload = Data(Self.text.prefix(3000))
        let compressed = try zstd(["-3"], payload) + zstd(["-1"], Data(Self.text.dropFirst(3000).prefix(2000)))
        let whole = payload + Self.text.dropFirst(3000).prefix(2000)
        #expect(readAll(zstdSource(compressed)).data == whole)
        var wrong: [String] = []
        var failures = 0
        for position in 0..<compressed.count {
            var bad = compressed
            bad[position] ^= 0x55
            let read = readAll(zstdSource(bad), size: 1000)
            if read.last == 0 && read.data != whole { wrong.append("flip at \(position)") }
            if read.last == -1 { failures += 1 }
        }
        // A cut exactly between two frames leaves a whole stream of one frame (as a cut
        // between two gzip members does): its bytes are that frame's, checked.
        let firstFrame = try zstd(["-3"], payload).count
        for length in 0..<compressed.count {
            let read = readAll(zstdSource(compressed.prefix(length)), size: 1000)
            if read.last == 0 && !(length == firstFrame && read.data == payload) {
                wrong.append("prefix of \(length) ended cleanly")
            }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(20))")
        #expect(failures > compressed.count / 2, "only \(failures) of \(compressed.count) flips failed")
    }

    @Test("frames without checksums are counted: unprotected, as documented")
    func noChecksum() throws {
        let file = try zstd(["-3", "--no-check"], Data(Self.text.prefix(10_000)))
        let source = zstdSource(file)
        #expect(readAll(source).data == Self.text.prefix(10_000))
        #expect(source.framesWithoutChecksum == 1)
        let checked = zstdSource(try zstd(["-3"], Data(Self.text.prefix(10_000))))
        #expect(readAll(checked).last == 0)
        #expect(checked.framesWithoutChecksum == 0)
    }

    @Test("verified prefix: a frame's end is its check point; reading on reaches it")
    func verifiedPrefix() throws {
        let first = Data(Self.text.prefix(100_000))
        let file = try zstd(["-3"], first) + zstd(["-3"], Data(Self.text.dropFirst(100_000)))
        let stream = BlobInputStream(dataSource: zstdSource(file), mode: .synchronous)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 10)
        #expect(stream.read(&buffer, maxLength: 10) == 10)
        #expect(stream.verifiedPrefix == BlobVerifiedPrefix.checked(upTo: 0))
        try stream.readOnToCheckPoint()
        #expect(stream.verifiedPrefix == BlobVerifiedPrefix.checked(upTo: 100_000))
        stream.close()
    }

    @Test("offsets: forward, back to the start and forward again, past the end; a pipe refuses going back")
    func offsets() throws {
        let file = try zstd(["-3"], Self.text)
        let fromOffset = readAll(zstdSource(file), offset: 123_456)
        #expect(fromOffset.last == 0 && fromOffset.data == Self.text.dropFirst(123_456))

        let source = zstdSource(file)
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 1000)
        #expect(stream.read(&buffer, maxLength: 1000) == 1000)
        try source.seek(to: 200_000)
        #expect(stream.read(&buffer, maxLength: 1000) == 1000)
        #expect(Data(buffer) == Self.text[200_000..<201_000])
        try source.seek(to: 10)
        #expect(stream.read(&buffer, maxLength: 1000) == 1000)
        #expect(Data(buffer) == Self.text[10..<1010])
        stream.close()

        let past = readAll(zstdSource(file), offset: Int64(Self.text.count) + 1)
        #expect(past.last == -1 && past.error?.code == .invalidOffset, "\(String(describing: past.error))")

        // Incompressible: far more compressed bytes than the reader's buffer holds, so the
        // start is gone from it once the read is past 600,000.
        let random = TestBytes.random(1 << 20, seed: 41)
        let big = try zstd(["-1"], random)
        let pipe = Pipe()
        let writer = Thread {
            pipe.fileHandleForWriting.write(big)
            try? pipe.fileHandleForWriting.close()
        }
        writer.start()
        let overPipe = ZstdDataSource(upstream: FileHandleDataSource(fileHandle: pipe.fileHandleForReading))
        overPipe.open()
        try overPipe.seek(to: 600_000)
        #expect(overPipe.read(&buffer, maxLength: 1000) == 1000)
        #expect(Data(buffer) == random[600_000..<601_000])
        #expect(throws: BlobStreamError.self) { try overPipe.seek(to: 0) }
        #expect(overPipe.read(&buffer, maxLength: 1000) == 1000, "a refused move changes nothing")
        #expect(Data(buffer) == random[601_000..<602_000])
        overPipe.close()
    }

    @Test("SourceConformance finds nothing: synchronous and asynchronous upstreams, with failing variants")
    func conformance() throws {
        let expected = Data(Self.text.prefix(60_000))
        let file = try zstd(["-3"], expected)
        let cut = file.prefix(file.count - 5)
        var damaged = file
        damaged[damaged.count - 2] ^= 1 // the content checksum
        let flipped = damaged
        let sync = SourceConformance.check(
            expected: expected, failing: { ZstdDataSource(upstream: InMemoryDataSource(data: flipped)) }
        ) { ZstdDataSource(upstream: InMemoryDataSource(data: file, chunkSize: 4096)) }
        #expect(sync.isEmpty, "\(sync)")
        let queue = DispatchQueue(label: "zstd-slow-upstream")
        let slow: @Sendable (Data) -> InMemoryDataSource = { bytes in
            InMemoryDataSource(
                data: bytes, open: .async(queue: queue, delay: 0.01), chunkSize: 2000,
                refillDelay: (queue: queue, delay: 0.0001))
        }
        let async = SourceConformance.check(expected: expected, failing: { ZstdDataSource(upstream: slow(cut)) }) {
            ZstdDataSource(upstream: slow(file))
        }
        #expect(async.isEmpty, "\(async)")
        for payload in [Data(), Data([7])] {
            let small = try zstd(["-3"], payload)
            let findings = SourceConformance.check(expected: payload) {
                ZstdDataSource(upstream: InMemoryDataSource(data: small))
            }
            #expect(findings.isEmpty, "\(payload.count) bytes: \(findings)")
        }
    }

    @Test("zstd:<url> through BlobSources: a file's bytes; no inner URL is .malformedURL")
    func registry() throws {
        let folder = try TemporaryDirectory(prefix: "blobstream-zstd")
        defer { folder.remove() }
        let path = try folder.file("text.zst", try zstd(["-3"], Self.text))
        let registry = BlobSources().makeRegistry()
        let stream = try BlobInputStream(url: "zstd:file://\(path)", registry: registry)
        stream.open()
        let (data, last) = stream.readToEnd()
        stream.close()
        #expect(last == 0 && sha256(data) == sha256(Self.text))
        #expect {
            _ = try registry.makeSource(url: "zstd:")
        } throws: { ($0 as? BlobStreamError)?.code == .malformedURL }
    }

    @Test("closing the stream from another thread ends a read blocked on the upstream's silent pipe")
    func closeWakesBlockedUpstream() throws {
        let pipe = Pipe() // the writer stays open and silent
        let source = ZstdDataSource(upstream: FileHandleDataSource(fileHandle: pipe.fileHandleForReading))
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        let outcome = stream.closeWhileReading(opening: true)
        #expect(outcome.blocked, "the read did not block")
        #expect(outcome.result == -1, "close() did not end the blocked read: \(String(describing: outcome.result))")
        try pipe.fileHandleForWriting.close()
        try pipe.fileHandleForReading.close()
    }
}
