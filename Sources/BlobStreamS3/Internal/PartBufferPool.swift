import BlobStream
import Foundation
import NIOCore

/// The buffers of an upload's parts, each used again for a later part once its part is sent:
/// an upload holds about `parallelism` parts' worth of memory whatever the source's length,
/// and neither the allocator nor the kernel (which zeroes every new mapping) is asked for a
/// part-sized block per part.
///
/// Freed part-sized blocks are what made an upload's memory grow before: glibc raises its
/// mmap threshold when a mapped block is freed, so the next ones come from per-thread
/// arenas, which keep them resident (1 GiB in 8 MiB parts at 4 in flight peaked at
/// ~134 MiB, ~75 MiB with a fixed threshold).
///
/// A buffer comes back with `recycle` after its part was sent, and `take` clears it on the
/// reader's thread once nothing else holds its storage (the HTTP client lets go of a
/// request's body just after its answer). Should something still hold it after a short wait,
/// `ByteBuffer` gives the taker new storage (copy on write): a part never gets the bytes of
/// a part still in use.
///
/// The state is behind an `NSCondition` (a pthread mutex and condition variable, which
/// ThreadSanitizer sees: `Synchronization.Mutex` hands a contended lock over in the kernel,
/// where it does not). A taker that finds every kept buffer still held waits on it: `recycle`
/// wakes it at once; the HTTP client letting go of a body tells no one, so the taker also
/// looks again every millisecond, for ~20 ms at most.
final class PartBufferPool: @unchecked Sendable { // `state` is only touched with `condition` locked
    private struct State {
        var free: [ByteBuffer] = []
        var made = 0
        var renewed = 0
    }
    private let condition = NSCondition()
    private var state = State()

    /// How long a taker waits for a kept buffer to be let go before it gets new storage.
    private static let heldWait: TimeInterval = 0.020
    /// How often a waiting taker looks again (nothing announces a body let go).
    private static let recheck: TimeInterval = 0.001

    /// Runs `body` on the state with the lock held.
    private func locked<T>(_ body: (inout State) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&state)
    }

    /// An empty pool.
    init() {}

    /// How many buffers the pool has allocated (a buffer used again does not count).
    var made: Int { locked { $0.made } }

    /// How many kept buffers got new storage when taken, because something still held theirs.
    var renewed: Int { locked { $0.renewed } }

    /// An empty buffer with room for `capacity` bytes, its start on a 64-byte boundary (so
    /// the kernel fills it at full speed: `alignStartForKernelCopies`): one sent before when
    /// there is one.
    ///
    /// Blocks for up to ~20 ms (on the reader's thread) while every kept buffer is still
    /// held elsewhere: the HTTP client lets go of a request's body just after its answer.
    func take(capacity: Int) -> ByteBuffer {
        var buffer = takeCleared(capacity: capacity + ByteBuffer.alignmentSlack)
        buffer.alignStartForKernelCopies()
        return buffer
    }

    /// `take`'s buffer before its start is aligned.
    private func takeCleared(capacity: Int) -> ByteBuffer {
        let deadline = Date(timeIntervalSinceNow: Self.heldWait)
        // A kept buffer nothing else holds (cleared), or none kept (nil, false), or all still
        // held past the deadline (nil, true).
        let found: (buffer: ByteBuffer?, held: Bool)
        condition.lock()
        while true {
            if let result = Self.look(in: &state, capacity: capacity) {
                found = result
                break
            }
            let now = Date()
            if now >= deadline {
                found = (nil, true)
                break
            }
            // Woken by `recycle`, or after `recheck` to see whether a body was let go.
            _ = condition.wait(until: min(deadline, now.addingTimeInterval(Self.recheck)))
        }
        condition.unlock()
        if let buffer = found.buffer { return buffer }
        if !found.held { return ByteBufferAllocator().buffer(capacity: capacity) }
        // Still held: new storage for this part (copy on write), the old one goes when let go.
        guard var buffer = locked({ $0.free.popLast() }) else {
            return take(capacity: capacity)
        }
        buffer.clear(minimumCapacity: capacity)
        locked { $0.renewed += 1 }
        return buffer
    }

    /// A kept buffer nothing else holds, cleared (buffer, false); none kept, counted as made
    /// (nil, false); or nil while every kept buffer is still held. With the lock held.
    private static func look(in state: inout State, capacity: Int) -> (buffer: ByteBuffer?, held: Bool)? {
        for index in state.free.indices.reversed()
        where state.free[index].modifyIfUniquelyOwned({ $0.clear(minimumCapacity: capacity) }) != nil {
            return (state.free.remove(at: index), false)
        }
        if state.free.isEmpty {
            state.made += 1
            return (nil, false)
        }
        return nil
    }

    /// Keeps `buffer`, whose part is sent, for a later part.
    func recycle(_ buffer: consuming ByteBuffer) {
        let kept = consume buffer
        locked { $0.free.append(kept) }
        condition.signal()
    }
}

extension PartBufferPool {
    /// A part's buffer handed to the task that sends it: the task takes it out, so that no
    /// closure keeps a reference to its storage once the part is sent.
    final class Handoff: Sendable {
        private let slot: Locked<ByteBuffer?>

        /// Holds `buffer` until `take`.
        init(_ buffer: consuming ByteBuffer) { slot = Locked(buffer) }

        /// The buffer (an empty one when taken already).
        func take() -> ByteBuffer { slot.withLock { $0.take() } ?? ByteBuffer() }
    }
}
