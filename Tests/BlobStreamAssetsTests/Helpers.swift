import BlobStream
import BlobStreamAssets
import BlobStreamTestSupport
import Crypto
import Foundation
import Glibc

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Deterministic pseudo-random bytes, so every run reads the same data.
func sampleBytes(_ count: Int, seed: UInt64 = 0xA55E7) -> Data { TestData.pseudoRandom(count, seed: seed) }

/// SHA-256 of some bytes, to compare what was read with what was written.
func sha(_ data: Data) -> SHA256.Digest { SHA256.hash(data: data) }

/// A folder of its own for each test (see `TemporaryDirectory`).
typealias TempDir = TemporaryDirectory

/// A library folder with one asset at `originals/<name>` (and optionally an edited one);
/// returns the library and the asset's URL.
func makeLibrary(_ dir: TempDir, name: String = "IMG_0001.JPG", original: Data, edited: Data? = nil) throws -> (DirectoryAssetLibrary, String) {
    try dir.file("originals/" + name, original)
    if let edited { try dir.file("renders/" + name, edited) }
    let library = DirectoryAssetLibrary(root: dir.url)
    return (library, DirectoryAssetLibrary.assetURL(forRelativePath: name)!)
}

/// Waits until `condition` holds or `timeout` passes; returns whether it held.
func waitUntil(timeout: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while !condition() {
        if Date() > deadline { return false }
        usleep(2_000)
    }
    return true
}

/// Reads a stream to its end with reads of `size` bytes; `progress` runs after each read
/// with the total so far. Returns the bytes and the last result (0 or −1).
func drain(_ stream: InputStream, size: Int = 65_536, nextSize: ((Int) -> Int)? = nil, progress: (Int) -> Void = { _ in }) -> (Data, Int) {
    var out = Data()
    var buffer = [UInt8](repeating: 0, count: size)
    while true {
        let n = stream.read(&buffer, maxLength: max(1, min(size, nextSize?(out.count) ?? size)))
        if n <= 0 { return (out, n) }
        out.append(buffer, count: n)
        progress(out.count)
    }
}

/// Reads `source` through a synchronous stream (opened on this thread).
func readSynchronously(
    _ source: any BlobDataSource, size: Int = 65_536, nextSize: ((Int) -> Int)? = nil, progress: (Int) -> Void = { _ in }
) -> (data: Data, last: Int, error: BlobStreamError?) {
    let stream = BlobInputStream(dataSource: source, mode: .synchronous)
    stream.open()
    let (data, last) = drain(stream, size: size, nextSize: nextSize, progress: progress)
    let error = stream.streamError as? BlobStreamError
    stream.close()
    return (data, last, error)
}

/// The result of reading a stream in asynchronous mode.
struct AsyncRead: Sendable {
    var data = Data()
    var events: [String] = []
    var finished = false
    var error: BlobStreamError?
}

typealias Box<T> = TestBox<T>


/// Reads `source` through an asynchronous `BlobInputStream` scheduled on the run loop of a
/// thread of its own: reads `size` bytes (or what `nextSize` says for the total so far) on each `.hasBytesAvailable` (then `progress` runs
/// there with the total), closes on the end or an error.
func readAsynchronously(
    _ source: any BlobDataSource, size: Int = 65_536, timeout: TimeInterval = 30,
    nextSize: (@Sendable (Int) -> Int)? = nil, progress: @escaping @Sendable (Int) -> Void = { _ in }
) -> AsyncRead {
    let result = Box(AsyncRead())
    let done = DispatchSemaphore(value: 0)
    let handoff = Handoff(value: source)
    let thread = Thread {
        let stream = BlobInputStream(dataSource: handoff.value, mode: .asynchronous)
        var buffer = [UInt8](repeating: 0, count: size)
        let recorder = EventRecorder { s, event in
            if event == .hasBytesAvailable {
                let want = max(1, min(size, nextSize?(result.value.data.count) ?? size))
                let n = (s as! InputStream).read(&buffer, maxLength: want)
                if n > 0 {
                    result.value.data.append(buffer, count: n)
                    progress(result.value.data.count)
                }
            } else if event == .endEncountered || event == .errorOccurred {
                result.value.error = s.streamError as? BlobStreamError
                s.close()
            }
        }
        stream.delegate = recorder
        stream.schedule(in: .current, forMode: .default)
        stream.open()
        result.value.finished = BlobInputStream.runCurrentRunLoop(timeout: timeout) { stream.streamStatus == .closed }
        result.value.events = recorder.names
        stream.close()
        done.signal()
    }
    thread.start()
    if done.wait(timeout: .now() + timeout + 5) == .timedOut {
        return AsyncRead(finished: false)
    }
    return result.value
}

/// The source's own error (the stream wraps it), as a `BlobStreamError`.
func cause(_ error: BlobStreamError?) -> BlobStreamError? {
    (error?.cause as? BlobStreamError) ?? error
}
