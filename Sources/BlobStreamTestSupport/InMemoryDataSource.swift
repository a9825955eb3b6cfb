import BlobStream
import Foundation

/// A source of bytes held in memory, scriptable for tests: synchronous or asynchronous
/// open, failure at open or at byte N, reads capped to a chunk size, and bytes that become
/// available only after a delay on a queue (as a network or photo-library source would).
///
/// Offsets seek in constant time (`offsetCapability == .seek`): `seek(to:)` and `readOffset`,
/// or the original's `.fileCurrentOffsetKey` through the default `property` / `setProperty`.
public final class InMemoryDataSource: BlobDataSource, Sendable {
    /// How `open()` completes.
    public enum OpenBehavior: Sendable {
        /// Inside `open()`.
        case immediate
        /// Later, on `queue`, after `delay` seconds.
        case async(queue: DispatchQueue, delay: TimeInterval)
    }

    /// The observable state.
    public let state = BlobDataSourceState()
    /// The bytes the source delivers.
    public let data: Data
    private let openBehavior: OpenBehavior
    private let openError: (any Error)?
    private let failAt: (offset: Int, error: any Error)?
    private let chunkSize: Int
    private let refill: (queue: DispatchQueue, delay: TimeInterval)?
    /// The read position, whether `close()` was called, and the count of reads, under a
    /// lock: the owner's calls and the announcements from a queue (a refill, an asynchronous
    /// open) meet there, on different threads. The state is announced after unlocking
    /// (observers run outside any lock). A `Locked` (a pthread lock), not a `Mutex`:
    /// ThreadSanitizer sees pthread locks but not a contended `Mutex` (whose hand-over
    /// happens in the kernel), and this source runs in its users' sanitized tests.
    private let cursor = Locked(Cursor())

    private struct Cursor {
        var position = 0
        var closed = false
        var reads = 0
    }

    /// Makes a source.
    ///
    /// - Parameters:
    ///   - data: the bytes to deliver.
    ///   - open: `.immediate`, or `.async(queue:delay:)` to complete later on a queue.
    ///   - failAtOpen: when set, opening fails with this error.
    ///   - failAt: when set, exactly `offset` bytes are delivered, then reads fail with `error`.
    ///   - chunkSize: the most bytes one `read` returns.
    ///   - refillDelay: when set, `hasBytesAvailable` drops to false after each read and comes
    ///     back after `delay` seconds on `queue` (announced from there).
    public init(
        data: Data, open: OpenBehavior = .immediate, failAtOpen: (any Error)? = nil,
        failAt: (offset: Int, error: any Error)? = nil, chunkSize: Int = .max,
        refillDelay: (queue: DispatchQueue, delay: TimeInterval)? = nil
    ) {
        precondition(chunkSize > 0)
        self.data = data
        self.openBehavior = open
        self.openError = failAtOpen
        self.failAt = failAt
        self.chunkSize = chunkSize
        self.refill = refillDelay
    }

    /// How many times `read` was called.
    public var readCount: Int { cursor.withLock { c in c.reads } }

    /// The number of bytes the source holds.
    public var length: Int64? { Int64(data.count) }
    /// `.seek`: any offset is reached at once.
    public var offsetCapability: BlobOffsetCapability { .seek }
    /// Where the source announces its state: the queue of an asynchronous open or of refills,
    /// else the caller's thread.
    public var completionContext: BlobCompletionContext {
        if case .async(let queue, _) = openBehavior { return .queue(queue) }
        if let refill { return .queue(refill.queue) }
        return .caller
    }

    /// Opens the source, at once or after the configured delay; `failAtOpen` ends it with its
    /// error instead.
    public func open() {
        switch openBehavior {
        case .immediate:
            finishOpen()
        case .async(let queue, let delay):
            // Weakly: a source its owner dropped is not kept alive by a late completion.
            queue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.finishOpen() }
        }
    }

    private func finishOpen() {
        if let openError {
            state.error = openError
            return
        }
        state.isOpenCompleted = true
        announceAvailability()
    }

    /// True when everything was delivered (and no failure is due at the end).
    private func atEnd(_ position: Int) -> Bool {
        position >= data.count && (failAt == nil || failAt!.offset > data.count)
    }

    private func announceAvailability() {
        guard let position = cursor.withLock({ c in c.closed ? nil : c.position }) else { return }
        if atEnd(position) {
            state.isAtEnd = true
        } else {
            state.hasBytesAvailable = true
        }
    }

    /// Copies up to `maxLength` bytes (at most `chunkSize`) from the current offset; fails with
    /// `failAt`'s error at its offset, and returns -1 once closed.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        enum Outcome {
            case closed, failed, end
            case bytes(Int, end: Bool)
        }
        let outcome: Outcome = cursor.withLock { c in
            c.reads += 1
            if c.closed || state.error != nil { return .closed }
            if let failAt, c.position >= failAt.offset { return .failed }
            if c.position >= data.count { return .end }
            var n = min(maxLength, chunkSize, data.count - c.position)
            if let failAt { n = min(n, failAt.offset - c.position) }
            let start = c.position
            data.withUnsafeBytes { raw in
                buffer.update(from: raw.bindMemory(to: UInt8.self).baseAddress! + start, count: n)
            }
            c.position += n
            return .bytes(n, end: atEnd(c.position))
        }
        switch outcome {
        case .closed:
            return -1
        case .failed:
            state.error = failAt!.error
            return -1
        case .end:
            state.isAtEnd = true
            return 0
        case .bytes(let n, let end):
            if end {
                state.isAtEnd = true
            } else if let refill {
                state.hasBytesAvailable = false
                refill.queue.asyncAfter(deadline: .now() + refill.delay) { [weak self] in
                    self?.announceAvailability()
                }
            }
            return n
        }
    }

    /// The offset of the next byte (before `open()`, where reading will start).
    public var readOffset: Int64? { Int64(cursor.withLock { c in c.position }) }

    /// Moves anywhere up to the end in constant time, before or after `open()` (even after
    /// `close()`); once open, announces the end or bytes again.
    ///
    /// - Throws: `.invalidOffset` for a negative offset or one past the end, changing nothing.
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0, offset <= data.count else {
            throw BlobStreamError(
                .invalidOffset,
                offset < 0
                    ? "cannot move the in-memory source to offset \(offset): an offset is 0 or more"
                    : "offset \(offset) is past the end of the in-memory source (\(data.count) bytes)")
        }
        let position = Int(offset)
        cursor.withLock { c in c.position = position }
        if state.isOpenCompleted {
            if position >= data.count {
                state.isAtEnd = true
            } else {
                state.isAtEnd = false
                state.hasBytesAvailable = true
            }
        }
    }

    /// Closes the source: later reads return -1.
    public func close() { cursor.withLock { c in c.closed = true } }
}
