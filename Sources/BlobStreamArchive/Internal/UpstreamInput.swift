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
    /// Whether skip and seek callbacks are installed.
    let canSeek: Bool
    /// The upstream's offset of the next byte `read()` returns.
    private(set) var position: Int64 = 0
    /// How much the next read asks for.
    private var readSize = minimumReadSize
    /// A read met the upstream's end (libarchive failing after that, without saying why,
    /// means the archive ended early).
    private(set) var sawEnd = false
    /// The upstream's error, or a wait that could not be done; set once.
    private(set) var failure: (any Error)?
    private let signal: UpstreamSignal?
    /// Checks the gzip layer (if any) of the bytes read; nil when not asked for.
    let gzipCheck: GzipCheck?

    /// - Parameters:
    ///   - upstream: an upstream that is open (`isOpenCompleted`) and at offset 0.
    ///   - signal: the waiter fed by observers of an asynchronous upstream; nil for a
    ///     synchronous one.
    ///   - start: the upstream's offset (where it was moved before this input was made).
    ///   - checkingGzip: hand every byte read to a `GzipCheck` (only from offset 0); skips
    ///     are then refused while it checks, so that it sees every byte.
    init(upstream: any BlobDataSource, signal: UpstreamSignal?, start: Int64 = 0, checkingGzip: Bool = false) {
        self.gzipCheck = checkingGzip && start == 0 ? GzipCheck() : nil
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

    deinit { buffer.deallocate() }

    var cancelled: Bool { signal?.isCancelled ?? false }

    /// Reads up to `blockSize` bytes into `buffer`: the count, 0 at the upstream's end, −1
    /// after recording `failure`.
    func read() -> Int {
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
        let n = upstream.read(buffer.assumingMemoryBound(to: UInt8.self), maxLength: readSize)
        if n > 0 {
            gzipCheck?.feed(buffer, count: n)
            position += Int64(n)
            readSize = min(readSize * 2, Self.blockSize)
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
        guard canSeek, failure == nil, request > 0, let length = upstream.length, gzipCheck?.isActive != true else { return 0 }
        let target = min(position + request, length)
        guard target > position, move(to: target) else { return 0 }
        let moved = target - position
        position = target
        readSize = Self.minimumReadSize
        return moved
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
        guard target >= 0, target <= length, move(to: target) else { return nil }
        if target != position {
            readSize = Self.minimumReadSize
            gzipCheck?.abandon()
        }
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
