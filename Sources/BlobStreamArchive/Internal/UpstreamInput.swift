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
///   input inflates it itself (`GzipLayer`: every member's CRC-32 and ISIZE checked, which
///   libarchive's gzip filter never does) and hands libarchive the decompressed bytes;
///   libarchive then reads the archive inside with no filter. A damaged or cut gzip
///   stream is the input's failure (`.corrupt` or `.truncated`). Skip and seek are then
///   not offered (they would move in the compressed bytes).
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
    private(set) var canSeek: Bool
    /// The upstream's offset of the next byte `read()` returns.
    private(set) var position: Int64 = 0
    /// How much the next read asks for.
    private var readSize = minimumReadSize
    /// A read met the upstream's end (libarchive failing after that, without saying why,
    /// means the archive ended early).
    private(set) var sawEnd = false
    /// The upstream's error, a wait that could not be done, or a damaged gzip layer; set once.
    private(set) var failure: (any Error)?
    /// `failure` is the gzip layer's (its message says what is wrong).
    private(set) var failureIsGzip = false
    private let signal: UpstreamSignal?

    // Gzip layer (see the type's documentation).
    private var wantsGzip: Bool
    /// Non-nil once the upstream was seen to start with a gzip member.
    private var gzip: GzipLayer?
    private enum GzipState { case inMember, between, ended }
    private var gzipState = GzipState.inMember
    /// Gzip members read whole, their CRC-32 and ISIZE checked.
    private(set) var gzipMembers = 0
    /// Compressed bytes read from the upstream and not used yet (`raw[rawStart..<rawEnd]`).
    private var raw: UnsafeMutableRawPointer?
    private var rawStart = 0, rawEnd = 0

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

    /// Before libarchive sees the input: when a gzip layer is wanted, reads the first bytes
    /// and takes the layer over if they start a gzip member (then `canSeek` is false).
    /// False after recording `failure`.
    func prepare() -> Bool {
        guard wantsGzip else { return true }
        wantsGzip = false
        raw = .allocate(byteCount: Self.blockSize, alignment: 64)
        // A first read of the usual size (an uncompressed tar's first header is all a search needs).
        guard fillRaw(atLeast: GzipLayer.magic.count, readSize: readSize) else { return false }
        guard startsGzipMember() else { return true } // the bytes read are handed out as they are
        guard let layer = GzipLayer() else {
            failure = BlobStreamError(.sourceFailed, "zlib could not start to inflate the gzip stream")
            return false
        }
        gzip = layer
        canSeek = false
        return true
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

    /// The next decompressed bytes of the gzip layer into `buffer`.
    private func inflate(_ gzip: GzipLayer) -> Int {
        while true {
            switch gzipState {
            case .ended:
                sawEnd = true
                return 0
            case .between:
                // Another member follows, or the gzip stream ends (anything after it is
                // ignored, as libarchive's gzip filter ignores it).
                guard fillRaw(atLeast: GzipLayer.magic.count) else { return -1 }
                if startsGzipMember() {
                    gzip.reset()
                    gzipState = .inMember
                } else {
                    gzipState = .ended
                }
            case .inMember:
                let available = rawEnd - rawStart
                let step = gzip.inflate(raw! + rawStart, count: available, into: buffer, capacity: Self.blockSize)
                rawStart += step.consumed
                switch step.result {
                case .failed(let message):
                    return failGzip(
                        .corrupt,
                        "the gzip stream is damaged (member \(gzipMembers + 1), before compressed offset \(position - Int64(rawEnd - rawStart))): \(message)"
                    )
                case .memberEnd:
                    gzipMembers += 1
                    gzipState = .between
                case .ok:
                    break
                }
                if step.produced > 0 { return step.produced }
                if case .ok = step.result, step.consumed == 0 {
                    // zlib needs more input than there is.
                    guard fillRaw(atLeast: available + 1) else { return -1 }
                    if rawEnd - rawStart == available {
                        return failGzip(
                            .truncated,
                            "the gzip stream is truncated: it ends inside member \(gzipMembers + 1), before its CRC-32 and size (after \(position) compressed bytes)"
                        )
                    }
                }
            }
        }
    }

    private func failGzip(_ code: BlobStreamError.Code, _ message: String) -> Int {
        failure = BlobStreamError(code, message)
        failureIsGzip = true
        return -1
    }

    /// The unused compressed bytes start with a gzip member's magic.
    private func startsGzipMember() -> Bool {
        guard let raw, rawEnd - rawStart >= GzipLayer.magic.count else { return false }
        let bytes = (raw + rawStart).assumingMemoryBound(to: UInt8.self)
        return (0..<GzipLayer.magic.count).allSatisfy { bytes[$0] == GzipLayer.magic[$0] }
    }

    /// Reads the upstream into `raw`, `readSize` bytes at most per read, until `count`
    /// unused bytes are there or the upstream ends; false after recording `failure`.
    private func fillRaw(atLeast count: Int, readSize: Int = blockSize) -> Bool {
        guard let raw else { return true }
        if rawStart > 0 {
            (raw).copyMemory(from: raw + rawStart, byteCount: rawEnd - rawStart)
            rawEnd -= rawStart
            rawStart = 0
        }
        while rawEnd < count && rawEnd < Self.blockSize {
            let n = readUpstream(into: raw + rawEnd, maxLength: min(readSize, Self.blockSize - rawEnd))
            if n < 0 { return false }
            if n == 0 { break }
            rawEnd += n
        }
        return true
    }

    /// One read of the upstream (waiting for an asynchronous one): the count, 0 at its
    /// end, −1 after recording `failure`.
    private func readUpstream(into target: UnsafeMutableRawPointer, maxLength: Int) -> Int {
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
                failure = BlobStreamError(
                    .wouldDeadlock,
                    "the upstream has no bytes yet and announces them on the very thread that would wait for them")
                return -1
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
        failure = upstream.error ?? BlobStreamError(.sourceFailed, "the upstream returned -1 without setting an error")
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

/// Wakes a thread waiting for an asynchronous upstream: observers of the upstream's state
/// call `poke()`; `cancel()` ends every wait for good.
final class UpstreamSignal: @unchecked Sendable {
    // Unchecked Sendable: `wakeup` is a lock (thread-safe by design), the flag is atomic.
    private let wakeup = NSCondition()
    private let cancelledFlag = Atomic<Bool>(false)

    var isCancelled: Bool { cancelledFlag.load(ordering: .acquiring) }

    /// Something changed upstream.
    func poke() {
        wakeup.lock()
        wakeup.broadcast()
        wakeup.unlock()
    }

    /// Ends every wait, now and later.
    func cancel() {
        cancelledFlag.store(true, ordering: .releasing)
        poke()
    }

    /// Waits until `ready()` is true or the signal is cancelled. `ready` is checked under
    /// the wakeup lock, so an announcement between the check and the wait is not lost.
    func wait(until ready: () -> Bool) {
        wakeup.lock()
        defer { wakeup.unlock() }
        while !ready() && !isCancelled {
            wakeup.wait()
        }
    }

    /// Observes the four values of `upstream`; hold the tokens as long as waits may happen.
    func observe(_ upstream: any BlobDataSource) -> [BlobObservation] {
        [
            upstream.observe(\.isOpenCompleted) { [self] _ in poke() },
            upstream.observe(\.hasBytesAvailable) { [self] _ in poke() },
            upstream.observe(\.isAtEnd) { [self] _ in poke() },
            upstream.observe(\.error) { [self] _ in poke() },
        ]
    }
}
