import BlobStream
import BlobStreamTestSupport
import Crypto
import Foundation
import Glibc

/// Deterministic pseudo-random bytes, so every run reads the same data.
func sampleBytes(_ count: Int, seed: UInt64 = 0xF11E5) -> Data { TestData.pseudoRandom(count, seed: seed) }

/// SHA-256 of some bytes, to compare what was read with what was written.
func sha(_ data: Data) -> SHA256.Digest { SHA256.hash(data: data) }

/// A folder of its own for each test (see `TemporaryDirectory`).
typealias TempDir = TemporaryDirectory

/// Reads a stream to its end; returns the bytes and the last result (0 or −1).
func drain(_ stream: InputStream, size: Int = 65_536) -> (Data, Int) { stream.readToEnd(chunkSize: size) }

/// Reads a source directly (no stream) with reads of `size` bytes until 0 or −1.
func drainSource(_ source: any BlobDataSource, size: Int = 65_536) -> (Data, Int) {
    var out = Data()
    var buffer = [UInt8](repeating: 0, count: size)
    while true {
        let n = source.read(&buffer, maxLength: size)
        if n <= 0 { return (out, n) }
        out.append(buffer, count: n)
    }
}

/// Writes all of `data` to `fd` with write(2) (stops quietly on an error such as EPIPE,
/// when the reader went away).
func writeAll(_ fd: Int32, _ data: Data) {
    data.withUnsafeBytes { raw in
        var done = 0
        while done < raw.count {
            let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            done += n
        }
    }
}

/// Starts a thread that writes `data` to the pipe's write end (after `delay` seconds), then
/// closes it. A reader that goes away early makes the writer stop (SIGPIPE is ignored).
@discardableResult
func startWriter(_ handle: FileHandle, _ data: Data, delay: TimeInterval = 0) -> DispatchSemaphore {
    ignoreSIGPIPE()
    let done = DispatchSemaphore(value: 0)
    let handoff = Handoff(value: handle)
    let thread = Thread {
        if delay > 0 { Thread.sleep(forTimeInterval: delay) } // the point: a writer that comes late
        writeAll(handoff.value.fileDescriptor, data)
        try? handoff.value.close()
        done.signal()
    }
    thread.start()
    return done
}

/// A broken pipe must end a writer thread, not the test process.
func ignoreSIGPIPE() {
    _ = signal(SIGPIPE, SIG_IGN)
}

/// The `BlobStreamError` a source set, or nil.
func sourceError(_ source: any BlobDataSource) -> BlobStreamError? {
    source.error as? BlobStreamError
}
