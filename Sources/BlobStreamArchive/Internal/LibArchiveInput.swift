import BlobStream
import BlobStreamCompression
import Foundation

/// What libarchive's callbacks read from: one pass over the archive's upstream, read through
/// the core kit's `BlobUpstreamReader` (which buffers, moves, waits for an asynchronous upstream and
/// detects the wait that would deadlock). A new input is made for each pass (each search for
/// a member); the reader lives as long as the archive source.
///
/// - Read sizes adapt (the reader's `minimumReadSize` and growth): a read right after a skip
///   or a seek asks for `minimumReadSize` bytes (libarchive typically wants a header of a few
///   hundred bytes there, then skips the member's body), and each read that follows one
///   without a move asks for twice as much, up to `blockSize`. Listing or locating a member
///   among thousands of small ones then reads a few KiB per member instead of whole blocks,
///   while a member's body is read in full blocks.
/// - Seeking: when the upstream can seek (`offsetCapability == .seek` and a known length),
///   libarchive gets skip and seek callbacks, which move the reader (`seek(to:)`); the
///   reader's `offset` serves `SEEK_CUR`, the upstream's `length` `SEEK_END`.
/// - Gzip: when asked (`inflatingGzip`) and the upstream starts with a gzip member, the
///   input inflates it itself (see `LibArchiveInput+GzipLayer.swift`: every member's CRC-32
///   and ISIZE checked, which libarchive's gzip filter never does) and hands libarchive the
///   decompressed bytes; libarchive then reads the archive inside with no filter. A damaged
///   or cut gzip stream is the input's failure (`.corrupt` or `.truncated`). Skip and seek
///   are then not offered (they would move in the compressed bytes).
/// - Asynchronous upstreams: the reader waits for the upstream's announcement, except on the
///   thread where the upstream announces (`.wouldDeadlock`); `cancel()` on the reader (from
///   `close()` on any thread) ends a wait (`.closed`).
///
/// Used by one owner at a time (the callbacks run inside the owner's libarchive calls).
final class LibArchiveInput {
    /// The largest read, and the reader's buffer size.
    static let blockSize = 256 * 1024
    /// The first read, and the first read after each skip or seek.
    static let minimumReadSize = 8 * 1024

    /// A reader for an archive's upstream, with this input's read sizes.
    static func makeReader(
        _ upstream: any BlobDataSource, onChange: (@Sendable () -> Void)? = nil
    ) -> BlobUpstreamReader {
        BlobUpstreamReader(upstream, bufferSize: blockSize, minimumReadSize: minimumReadSize, onChange: onChange)
    }

    let reader: BlobUpstreamReader
    /// The upstream source (the reader's).
    var upstream: any BlobDataSource { reader.source }
    /// Whether skip and seek callbacks are installed (false when inflating a gzip layer).
    var canSeek: Bool
    /// The upstream's offset of the next byte `read()` takes.
    var position: Int64 { reader.offset }
    /// A read met the upstream's end (libarchive failing after that, without saying why,
    /// means the archive ended early).
    var sawEnd = false
    /// The upstream's error, the reader's (closed, a wait that would deadlock), or a damaged
    /// gzip layer; set once.
    var failure: (any Error)?
    /// `failure` is not the upstream's own error: the gzip layer's (its cause is zlib's), or
    /// the reader's (a wait that would deadlock, closed, an upstream that broke the contract).
    /// Its message says what is wrong.
    var failureIsOwn = false

    // Gzip layer (see `LibArchiveInput+GzipLayer.swift`).
    /// `prepare()` is to look for a gzip member at the start.
    var wantsGzip: Bool
    /// Non-nil once the upstream was seen to start with a gzip member.
    var gzip: GzipLayer?

    /// The upstream starts with a gzip member, which this input inflates.
    var inflatesGzip: Bool { gzip != nil }

    /// - Parameters:
    ///   - reader: the upstream's reader, open, at the offset the pass starts from.
    ///   - inflatingGzip: inflate a gzip layer here (only from offset 0; see `prepare()`).
    ///   - engine: the inflate engine of that layer.
    /// The engine that inflates the gzip layer.
    let engine: InflateEngine

    init(reader: BlobUpstreamReader, inflatingGzip: Bool = false, engine: InflateEngine = .automatic) {
        self.reader = reader
        self.engine = engine
        self.wantsGzip = inflatingGzip && reader.offset == 0
        self.canSeek = Self.canSeek(reader.source)
    }

    /// Whether skip and seek callbacks can be installed for `upstream`.
    static func canSeek(_ upstream: any BlobDataSource) -> Bool {
        upstream.offsetCapability == .seek && upstream.length != nil
    }

    /// The owner closed (or interrupted) the reader: a read or a wait of this input ends.
    var cancelled: Bool { reader.isCancelled }

    /// The next bytes for libarchive, lent through `bytes` (decompressed when inflating a
    /// gzip layer; valid until the next call): the count, 0 at the end, −1 after recording
    /// `failure`.
    /// The upstream's first bytes (up to 6), as handed to libarchive from offset 0.
    private(set) var leadingBytes: [UInt8] = []

    /// The upstream starts with a zstd frame written without its content checksum (as
    /// libarchive 3.6's writer and `bsdtar --zstd` write it): nothing checks its bytes.
    var startsWithUncheckedZstdFrame: Bool {
        leadingBytes.count >= 5 && leadingBytes[0..<4].elementsEqual([0x28, 0xB5, 0x2F, 0xFD])
            && leadingBytes[4] & 0x04 == 0
    }

    func read(lending bytes: inout UnsafeRawPointer?) -> Int {
        if failure != nil { return -1 }
        if let gzip { return inflate(gzip, lending: &bytes) }
        if reader.offset == 0, leadingBytes.isEmpty, let head = fillUpstream(atLeast: 6) {
            leadingBytes = Array(head.prefix(6))
        }
        guard let filled = fillUpstream(atLeast: 1) else { return -1 }
        if keepsRecentBytes { keepRecent(filled) }
        reader.consume(filled.count)
        bytes = filled.baseAddress
        return filled.count
    }

    // A zip read from an upstream that cannot seek has no central directory to read first:
    // the bytes lately handed to libarchive are kept, so that a local header's name can be
    // read as stored (see `ZipStoredNames.localName`).

    /// How many of the bytes lately handed to libarchive are kept at least (a local header
    /// is at most 30 + 2 × 65,535 bytes, and libarchive reads ahead at most a block past it).
    static let recentLimit = 1 << 20

    /// The bytes lately handed to libarchive, and the upstream offset of the first.
    private(set) var recent: [UInt8] = []
    private(set) var recentStart: Int64 = 0

    /// Whether the bytes handed out are kept: a zip (it starts with a local header) over an
    /// upstream that cannot seek.
    var keepsRecentBytes: Bool {
        !canSeek && gzip == nil && leadingBytes.count >= 4
            && leadingBytes[0..<4].elementsEqual([0x50, 0x4B, 0x03, 0x04])
    }

    private func keepRecent(_ bytes: UnsafeRawBufferPointer) {
        if recent.isEmpty { recentStart = reader.offset }
        recent.append(contentsOf: bytes)
        if recent.count > 2 * Self.recentLimit {
            let drop = recent.count - Self.recentLimit
            recent.removeFirst(drop)
            recentStart += Int64(drop)
        }
    }

    /// Reads the upstream (waiting for an asynchronous one) until `count` unconsumed bytes
    /// are buffered or the upstream ended, and lends them (empty at the end); nil after
    /// recording `failure`.
    func fillUpstream(atLeast count: Int) -> UnsafeRawBufferPointer? {
        if failure != nil { return nil }
        switch reader.fill(atLeast: count, waiting: true) {
        case .bytes(let bytes):
            if bytes.count < count { sawEnd = true }
            return bytes
        case .end:
            sawEnd = true
            return UnsafeRawBufferPointer(start: nil, count: 0)
        case .starved:
            // A waiting fill never starves; say so rather than end early.
            failOwn(.sourceFailed, "the upstream reader answered 'nothing yet' to a waiting read")
            return nil
        case .failed(let error):
            if let upstreamError = upstream.error {
                failure = upstreamError
            } else if let own = error as? BlobStreamError {
                failOwn(own.code, own.message, cause: own.cause)
            } else {
                failure = error
            }
            return nil
        }
    }

    /// Records a failure of this input's own (see `failureIsOwn`).
    func failOwn(_ code: BlobStreamError.Code, _ message: String, cause: (any Error)? = nil) {
        failure = BlobStreamError(code, message, cause: cause)
        failureIsOwn = true
    }

    /// Moves forward by up to `request` bytes (never past the upstream's end); returns how
    /// far it moved (0 makes libarchive read instead).
    ///
    /// Skip and seek move from the reader's offset, which is libarchive's position: bytes
    /// the reader holds unconsumed (after `prepare()`, or after a move inside its buffer)
    /// were never lent to libarchive (each read lends and consumes all it has).
    func skip(_ request: Int64) -> Int64 {
        guard canSeek, failure == nil, request > 0, let length = upstream.length else { return 0 }
        let from = position
        let target = min(from + request, length)
        guard target > from, (try? reader.seek(to: target)) != nil else { return 0 }
        return target - from
    }

    /// `lseek` semantics; nil when refused.
    func seek(_ offset: Int64, whence: Int32) -> Int64? {
        guard canSeek, failure == nil, let length = upstream.length else { return nil }
        let target: Int64
        switch whence {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = position + offset
        case SEEK_END: target = length + offset
        default: return nil
        }
        guard target >= 0, target <= length else { return nil }
        if target != position {
            guard (try? reader.seek(to: target)) != nil else { return nil }
        }
        return target
    }
}
