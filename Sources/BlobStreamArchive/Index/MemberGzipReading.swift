import BlobStream
import BlobStreamCompression

/// The inflating of a tar.gz member: the kit's gzip reader over the archive's own upstream
/// reader (the compressed bytes are buffered once), and how far into the member it is.
/// Not thread-safe: used under the archive source's lock.
final class MemberGzipReading: MemberDecompression {
    let gzip: GzipReader
    /// Member offset of the next byte `gzip` delivers (nil: not moved there yet).
    var position: Int64?
    /// Where skipped bytes go.
    let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 64 * 1024)
    static let scratchSize = 64 * 1024

    /// A member of `size` bytes at least twice the index's spacing is decoded on several
    /// threads (the kit's parallel decoding, which decodes whole chunks ahead); a smaller one
    /// on the caller's thread, from the seek point before it to its end only.
    init(reader: BlobUpstreamReader, index: GzipIndex, name: String, engine: InflateEngine, size: Int64) {
        let parallel = size >= 2 * Int64(index.spacing)
        gzip = GzipReader(
            upstream: reader, name: name, index: index, indexSpacing: nil, engine: engine, isal: .system,
            parallelism: parallel ? GzipReader.defaultParallelism : 1, acceptsUncheckedIndex: false,
            ownerWaits: true)
    }

    /// Moves to the member's offset 0 (`start` in the inflated tar): the first time, starts
    /// the decoding at the seek point before `start`.
    func restart(at start: Int64) throws(BlobStreamError) {
        if position == nil {
            gzip.target = start
            guard gzip.prepare(), gzip.begin(upstreamOpened: true) else {
                throw gzip.failure ?? BlobStreamError(.sourceFailed, "\(gzip.name): cannot start decoding")
            }
        } else {
            _ = try gzip.move(to: start, keepingFrom: gzip.produced)
        }
        position = 0
    }

    func read(_ out: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        switch gzip.decode(into: out, capacity: maxLength) {
        case .bytes(let n):
            gzip.target += Int64(n)
            return n
        case .end: return 0
        case .failed: return -1
        case .starved:
            // Never with `ownerWaits` (every strategy, the sequential decoder too, waits for
            // the upstream's announcement); should one answer it, the read fails, never ends early.
            gzip.record(gzip.errors.starvedRead(at: gzip.compressedOffset))
            return -1
        }
    }

    var failure: (any Error)? { gzip.failure }

    deinit {
        gzip.end()
        scratch.deallocate()
    }
}
