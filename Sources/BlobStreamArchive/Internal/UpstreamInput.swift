import BlobStream
import Foundation
import Synchronization

/// What libarchive's callbacks read from: an upstream `BlobDataSource`, read into a buffer
/// of its own (handed to libarchive, valid until the next read).
///
/// - Read sizes adapt: a read right after a skip or a seek asks for `minimumReadSize`
///   bytes (libarchive typically wants a header of a few hundred bytes there, then skips
///   the member's body), and each read that follows one without a skip asks for twice as
///   much, up to `blockSize`. Listing or locating a member among thousands of small ones
///   then reads a few KiB per member instead of whole blocks, while a member's body is
///   read in full blocks.
/// - Seeking: when the upstream can seek (`offsetCapability == .seek` and a known length),
///   skip and seek move it with `.fileCurrentOffsetKey`; the input keeps its own position
///   for `SEEK_CUR` and uses `length` for `SEEK_END`.
/// - Gzip: when asked (`inflatingGzip`) and the upstream starts with a gzip member, the
///   input inflates it itself (see `UpstreamInput+GzipLayer.swift`: every member's CRC-32
///   and ISIZE checked, which libarchive's gzip filter never does) and hands libarchive the
///   decompressed bytes; libarchive then reads the archive inside with no filter. A damaged
///   or cut gzip stream is the input's failure (`.corrupt` or `.truncated`). Skip and seek
///   are then not offered (they would move in the compressed bytes).
/// - Asynchronous upstreams: when the upstream has no bytes available yet, the input waits
///   for its announcement (a condition signalled by observers), but only when the calling
///   thread is not where the upstream announces (`completionContext.isCurrent`); there it
///   fails with `.wouldDeadlock` instead. `cancel()` (from `close()` on any thread) ends a
///   wait.
///
/// Used by one owner at a time (the callbacks run inside the owner's libarchive calls);
/// `cancel()` and the observers may come from any thread and touch only `signal`.
final class UpstreamInput {
    /// The largest read, and the buffer's size.
    static let blockSize = 256 * 1024
    /// The first read, and the first read after each skip or seek.
    static let minimumReadSize = 8 * 1024

    let upstream: any BlobDataSource
    let buffer: UnsafeMutableRawPointer
    /// Whether skip and seek callbacks are installed (false when inflating a gzip layer).
    var canSeek: Bool
    /// The upstream's offset of the next byte `read()` returns.
    var position: Int64 = 0
    /// How much the next read asks for.
    var readSize = minimumReadSize
    /// A read met the upstream's end (libarchive failing after that, without saying why,
    /// means the archive ended early).
    var sawEnd = false
    /// The upstream's error, a wait that could not be done, or a damaged gzip layer; set once.
    var failure: (any Error)?
    /// `failure` is this input's own finding, not the upstream's error: the gzip layer's
    /// (its cause is zlib's), a wait that cannot be done, an upstream that broke the contract.
    /// Its message says what is wrong.
    var failureIsOwn = false
    private let signal: UpstreamSignal?

    // Gzip layer (see `UpstreamInput+GzipLayer.swift`).
    /// `prepare()` is to look for a gzip member at the start.
    var wantsGzip: Bool
    /// Non-nil once the upstream was seen to start with a gzip member.
    var gzip: GzipLayer?
    /// Bytes read from the upstream and not used yet (`raw[rawStart..<rawEnd]`): compressed
    /// bytes for the gzip layer, or the first bytes `prepare()` read and found not to be gzip.
    var raw: UnsafeMutableRawPointer?
    var rawStart = 0
    var rawEnd = 0

    /// The upstream starts with a gzip member, which this input inflates.
    var inflatesGzip: Bool { gzip != nil }

    /// - Parameters:
    ///   - upstream: an upstream that is open (`isOpenCompleted`) and at offset 0.
    ///   - signal: the waiter fed by observers of an asynchronous upstream; nil for a
    ///     synchronous one.
    ///   - start: the upstream's offset (where it was moved before this input was made).
    ///   - inflatingGzip: inflate a gzip layer here (only from offset 0; see `prepare()`).
    init(upstream: any BlobDataSource, signal: UpstreamSignal?, start: Int64 = 0, inflatingGzip: Bool = false) {
        self.wantsGzip = inflatingGzip && start == 0
        self.upstream = upstream
        self.signal = signal
        self.canSeek = Self.canSeek(upstream)
        self.position = start
        self.buffer = .allocate(byteCount: Self.blockSize, alignment: 64)
    }

    /// Whether skip and seek callbacks can be installed for `upstream`.
    static func canSeek(_ upstream: any BlobDataSource) -> Bool {
        upstream.offsetCapability == .seek && upstream.length != nil
    }

    deinit {
        buffer.deallocate()
        raw?.deallocate()
    }

    var cancelled: Bool { signal?.isCancelled ?? false }

    /// Reads up to `blockSize` bytes into `buffer` (decompressed when inflating a gzip
    /// layer): the count, 0 at the end, −1 after recording `failure`.
    func read() -> Int {
        if failure != nil { return -1 }
        if let gzip { return inflate(gzip) }
        if let raw, rawEnd > rawStart {
            // Bytes `prepare()` read and found not to be gzip.
            let n = rawEnd - rawStart
            buffer.copyMemory(from: raw + rawStart, byteCount: n)
            rawStart = rawEnd
            return n
        }
        let n = readUpstream(into: buffer, maxLength: readSize)
        if n > 0 { readSize = min(readSize * 2, Self.blockSize) }
        return n
    }

    /// One read of the upstream (waiting for an asynchronous one): the count, 0 at its
    /// end, −1 after recording `failure`.
    func readUpstream(into target: UnsafeMutableRawPointer, maxLength: Int) -> Int {
        if failure != nil { return -1 }
        while true {
            if let signal, signal.isCancelled {
                failure = BlobStreamError(.closed, "closed while reading")
                return -1
            }
            if let error = upstream.error {
                failure = error
                return -1
            }
            if upstream.isAtEnd {
                sawEnd = true
                return 0
            }
            if upstream.hasBytesAvailable || signal == nil { break }
            // An asynchronous upstream with nothing yet: wait for its announcement.
            if upstream.completionContext.isCurrent {
                return failOwn(
                    .wouldDeadlock,
                    "the upstream has no bytes yet and announces them on the very thread that would wait for them")
            }
            signal!.wait { self.upstream.hasBytesAvailable || self.upstream.isAtEnd || self.upstream.error != nil }
        }
        let n = upstream.read(target.assumingMemoryBound(to: UInt8.self), maxLength: maxLength)
        if n > 0 {
            position += Int64(n)
            return n
        }
        if n == 0 {
            sawEnd = true
            return 0
        }
        if let error = upstream.error {
            failure = error
            return -1
        }
        return failOwn(.sourceFailed, "the upstream's read returned -1 without setting an error")
    }

    /// Records a failure of this input's own (see `failureIsOwn`); −1.
    func failOwn(_ code: BlobStreamError.Code, _ message: String, cause: (any Error)? = nil) -> Int {
        failure = BlobStreamError(code, message, cause: cause)
        failureIsOwn = true
        return -1
    }

    /// Moves forward by up to `request` bytes (never past the upstream's end); returns how
    /// far it moved (0 makes libarchive read instead).
    func skip(_ request: Int64) -> Int64 {
        guard canSeek, failure == nil, request > 0, let length = upstream.length, rawEnd == rawStart else { return 0 }
        let target = min(position + request, length)
        guard target > position, move(to: target) else { return 0 }
        let moved = target - position
        position = target
        readSize = Self.minimumReadSize
        return moved
    }

    /// `lseek` semantics; nil when refused.
    func seek(_ offset: Int64, whence: Int32) -> Int64? {
        guard canSeek, failure == nil, let length = upstream.length, rawEnd == rawStart else { return nil }
        let target: Int64
        switch whence {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = position + offset
        case SEEK_END: target = length + offset
        default: return nil
        }
        guard target >= 0, target <= length, move(to: target) else { return nil }
        if target != position { readSize = Self.minimumReadSize }
        position = target
        return target
    }

    private func move(to offset: Int64) -> Bool {
        upstream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey)
    }
}
