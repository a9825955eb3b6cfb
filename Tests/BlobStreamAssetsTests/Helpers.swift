import BlobStream
import BlobStreamAssets
import BlobStreamTestSupport
import Crypto
import Foundation
import Glibc

/// Deterministic pseudo-random bytes, so every run reads the same data.
func sampleBytes(_ count: Int, seed: UInt64 = 0xA55E7) -> Data { TestData.pseudoRandom(count, seed: seed) }

/// SHA-256 of some bytes, to compare what was read with what was written.
func sha(_ data: Data) -> SHA256.Digest { SHA256.hash(data: data) }

/// A folder of its own for each test (see `TemporaryDirectory`).
typealias TempDir = TemporaryDirectory

/// A library folder with one asset at `originals/<name>` (and optionally an edited one);
/// returns the library and the asset's URL.
func makeLibrary(_ dir: TempDir, name: String = "IMG_0001.JPG", original: Data, edited: Data? = nil) throws -> (
    DirectoryAssetLibrary, String
) {
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
func drain(
    _ stream: InputStream, size: Int = 65_536, nextSize: ((Int) -> Int)? = nil, progress: (Int) -> Void = { _ in }
) -> (Data, Int) {
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
    _ source: any BlobDataSource, size: Int = 65_536, nextSize: ((Int) -> Int)? = nil,
    progress: (Int) -> Void = { _ in }
) -> (data: Data, last: Int, error: BlobStreamError?) {
    let stream = BlobInputStream(dataSource: source, mode: .synchronous)
    stream.open()
    let (data, last) = drain(stream, size: size, nextSize: nextSize, progress: progress)
    let error = stream.streamError as? BlobStreamError
    stream.close()
    return (data, last, error)
}

/// The source's own error (the stream wraps it), as a `BlobStreamError`.
func cause(_ error: BlobStreamError?) -> BlobStreamError? {
    (error?.cause as? BlobStreamError) ?? error
}
