import BlobStream
import BlobStreamGzip
import BlobStreamTestSupport
import Crypto
import Foundation
@_exported import SharedTestHelpers

// Helpers shared by the gzip tests: the gzip CLI, deterministic inputs, draining a stream
// in either mode, a pipe source, a CRC-32.

enum Gzip {
    /// Runs `/usr/bin/gzip` with `arguments` on `input` (through a temporary file) and
    /// returns its standard output and exit status.
    static func run(_ arguments: [String], input: Data) throws -> (output: Data, status: Int32) {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("blobstream-gzip-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("input")
        try input.write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gzip")
        process.arguments = arguments + [file.path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (output, process.terminationStatus)
    }

    /// `gzip -c -n` (no name, no time: deterministic) of `data`.
    static func compress(_ data: Data, level: Int = 6) throws -> Data {
        let (output, status) = try run(["-c", "-n", "-\(level)"], input: data)
        guard status == 0 else { throw TestFailure("gzip -c failed with status \(status)") }
        return output
    }

    /// `gzip -dc` of `data`: what gzip itself makes of it.
    static func decompress(_ data: Data) throws -> Data {
        let (output, status) = try run(["-dc"], input: data)
        // 2 is gzip's "warning" status (e.g. "trailing zero bytes ignored").
        guard status == 0 || status == 2 else { throw TestFailure("gzip -dc failed with status \(status)") }
        return output
    }
}

/// Deterministic pseudo-random bytes (SplitMix64).
func randomBytes(_ count: Int, seed: UInt64) -> Data { TestBytes.random(count, seed: seed) }

/// Text-like, compressible bytes.
func textBytes(_ count: Int, seed: UInt64) -> Data {
    TestBytes.text(
        count, seed: seed,
        words: ["gzip", "stream", "member", "inflate", "offset", "blob", "source", "crc", "the", "a"],
        lineEvery: 13)
}

/// A gzip source over bytes in memory (a synchronous, seekable upstream), inflating with
/// `engine` (by default ISA-L here, as for users).
func gzipSource(
    _ gz: Data, name: String = "test.gz", chunkSize: Int = .max, engine: InflateEngine = .automatic
) -> GzipDataSource {
    GzipDataSource(upstream: InMemoryDataSource(data: gz, chunkSize: chunkSize), name: name, engine: engine)
}

/// What reading a stream to its end gave.
struct Drained {
    var data: Data
    /// The last `read` result: 0 for a clean end, −1 for an error.
    var last: Int
    /// The source's error (`streamError`'s cause) when the stream failed.
    var error: BlobStreamError?
}

/// Opens a synchronous stream over `source` and reads it to its end with reads of `size`.
func drainSync(_ source: any BlobDataSource, size: Int = 65_536, offset: Int? = nil) -> Drained {
    let stream = BlobInputStream(dataSource: source, mode: .synchronous)
    if let offset { _ = stream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey) }
    stream.open()
    let (out, n) = stream.readToEnd(chunkSize: size)
    let error = (stream.streamError as? BlobStreamError)?.cause as? BlobStreamError
    stream.close()
    return Drained(data: out, last: n, error: error)
}

/// A minimal source over the read end of a pipe: blocking `read(2)`, never seekable
/// (`offsetCapability` `.none` so that a backward move must be refused by the gzip source).
final class PipeReadSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: `fd` and `closed` are touched only by the owner's serialized calls.
    let state = BlobDataSourceState()
    private var fd: Int32
    private var closed = false
    init(fileDescriptor: Int32) { fd = fileDescriptor }

    func open() {
        state.isOpenCompleted = true
        state.hasBytesAvailable = true // a read blocks until bytes or EOF: never waits for a callback
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if closed { return -1 }
        while true {
            let n = Foundation.read(fd, buffer, maxLength)
            if n > 0 { return n }
            if n == 0 {
                state.isAtEnd = true
                return 0
            }
            if errno == EINTR { continue }
            state.error = BlobStreamError(.ioFailed, "pipe read failed", cause: ErrnoError(errno))
            return -1
        }
    }

    func close() {
        if !closed {
            closed = true
            Foundation.close(fd)
        }
    }
}

/// A pipe whose write end is fed `data` in `chunk`-sized writes by a thread of its own.
func pipeFeeding(_ data: Data, chunk: Int = 4096) -> Int32 {
    signal(SIGPIPE, SIG_IGN) // a reader that stops early must not kill the test process
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    let writeEnd = fds[1]
    let thread = Thread {
        var offset = 0
        data.withUnsafeBytes { raw in
            while offset < raw.count {
                let n = write(writeEnd, raw.baseAddress! + offset, min(chunk, raw.count - offset))
                if n <= 0 { break } // the reader closed its end
                offset += n
            }
        }
        close(writeEnd)
    }
    thread.start()
    return fds[0]
}
