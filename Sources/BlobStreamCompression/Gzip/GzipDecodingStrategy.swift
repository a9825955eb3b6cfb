import BlobStream

/// What one call to `GzipDecodingStrategy.decode(into:capacity:)` did.
package enum GzipDecodeStep {
    /// This many bytes were written (> 0).
    case bytes(Int)
    /// The end of the last member (and of any padding); `target` was reached.
    case end
    /// The upstream has nothing available now (an asynchronous upstream; the owner waits
    /// for its announcement).
    case starved
    /// Decoding failed; final.
    case failed(BlobStreamError)
}

/// One way of decoding a gzip stream, behind `GzipReader`, which picks one and switches
/// between them:
///
/// - `GzipDecoder`: member after member from the start, with the engine's inflater (zlib or
///   ISA-L), checking every member's trailer; the only one over an asynchronous upstream.
/// - `GzipIndexWalker`: raw deflate from a seek point of a `GzipIndex`, checking every chunk
///   decoded whole against the index's CRC-32 (or, from the start, recording seek points).
/// - `ParallelIndexedReader`: whole chunks on several threads, each checked before any of
///   its bytes is handed out.
///
/// Every strategy discards the bytes before `target` and writes those from `target` on; the
/// owner (`GzipReader`) sets `target` before each call. Not thread-safe: one owner.
protocol GzipDecodingStrategy: AnyObject {
    /// The decompressed offset of the next byte to write out; bytes before it are discarded.
    var target: Int64 { get set }
    /// Decompressed bytes produced so far (written out, looked ahead or discarded).
    var produced: Int64 { get }
    /// Every decompressed byte before this offset passed a check (see `BlobVerifiedPrefix`).
    var verified: Int64 { get }
    /// The last member ended at the upstream's end.
    var isFinished: Bool { get }
    /// Decodes into `out` (at most `capacity` bytes), discarding first what lies before
    /// `target`.
    func decode(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> GzipDecodeStep
}

extension GzipDecoder: GzipDecodingStrategy {
    var produced: Int64 { inflated }

    func decode(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> GzipDecodeStep {
        switch pump(into: out, capacity: capacity) {
        case .bytes(let n): .bytes(n)
        case .end: .end
        case .starved: .starved
        case .failed: .failed(failure ?? errors.notOpen())
        }
    }
}

/// A decoding that waits for its upstream and throws: its bytes, or `.end` at 0.
private func step(_ read: () throws(BlobStreamError) -> Int) -> GzipDecodeStep {
    do {
        let n = try read()
        return n > 0 ? .bytes(n) : .end
    } catch {
        return .failed(error)
    }
}

extension GzipIndexWalker: GzipDecodingStrategy {
    func decode(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> GzipDecodeStep {
        step { () throws(BlobStreamError) in try read(into: out, capacity: capacity) }
    }
}

extension ParallelIndexedReader: GzipDecodingStrategy {
    var produced: Int64 { position }
    /// Only checked chunks are handed out: everything up to the next byte handed out.
    var verified: Int64 { position }

    func decode(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> GzipDecodeStep {
        step { () throws(BlobStreamError) in try read(into: out, capacity: capacity) }
    }
}
