import BlobStream
import Foundation

/// A source of bytes held in memory, scriptable for tests: synchronous or asynchronous
/// open, failure at open or at byte N, reads capped to a chunk size, and bytes that become
/// available only after a delay on a queue (as a network or photo-library source would).
///
/// Offsets seek in constant time (`offsetCapability == .seek`).
public final class InMemoryDataSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: `position` and `closed` are touched only by the owner's serialized
    // calls and by blocks on `queue` that run while the owner waits (rule 1); the state
    // object is thread-safe itself.

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
    private var position = 0
    private var closed = false
    private let counters = NSLock()
    private var _reads = 0

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
    public var readCount: Int { counters.withLock { _reads } }

    public var length: Int64? { Int64(data.count) }
    public var offsetCapability: BlobOffsetCapability { .seek }
    public var completionContext: BlobCompletionContext {
        if case .async(let queue, _) = openBehavior { return .queue(queue) }
        if let refill { return .queue(refill.queue) }
        return .caller
    }

    public func open() {
        switch openBehavior {
        case .immediate:
            finishOpen()
        case .async(let queue, let delay):
            queue.asyncAfter(deadline: .now() + delay) { self.finishOpen() }
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

    private func announceAvailability() {
        if closed { return }
        if position >= data.count, failAt == nil || failAt!.offset > data.count {
            state.isAtEnd = true
        } else {
            state.hasBytesAvailable = true
        }
    }

    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        counters.withLock { _reads += 1 }
        if closed || state.error != nil { return -1 }
        if let failAt, position >= failAt.offset {
            state.error = failAt.error
            return -1
        }
        if position >= data.count {
            state.isAtEnd = true
            return 0
        }
        var n = min(maxLength, chunkSize, data.count - position)
        if let failAt { n = min(n, failAt.offset - position) }
        data.withUnsafeBytes { raw in
            buffer.update(from: raw.bindMemory(to: UInt8.self).baseAddress! + position, count: n)
        }
        position += n
        if position >= data.count, failAt == nil || failAt!.offset > data.count {
            state.isAtEnd = true
        } else if let refill {
            state.hasBytesAvailable = false
            refill.queue.asyncAfter(deadline: .now() + refill.delay) { self.announceAvailability() }
        }
        return n
    }

    public func property(forKey key: Stream.PropertyKey) -> Any? {
        key == .fileCurrentOffsetKey ? NSNumber(value: position) : nil
    }

    public func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let offset = BlobOffset.value(from: property),
            offset <= data.count
        else { return false }
        position = Int(offset)
        if state.isOpenCompleted {
            if position >= data.count {
                state.isAtEnd = true
            } else {
                state.isAtEnd = false
                state.hasBytesAvailable = true
            }
        }
        return true
    }

    public func close() { closed = true }
}
