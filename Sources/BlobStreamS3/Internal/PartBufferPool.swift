import Foundation
import NIOConcurrencyHelpers
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
/// The state is behind a pthread lock (`NIOLockedValueBox`), which ThreadSanitizer sees:
/// `Synchronization.Mutex` hands a contended lock over in the kernel, where it does not.
final class PartBufferPool: Sendable {
    private struct State {
        var free: [ByteBuffer] = []
        var made = 0
        var renewed = 0
    }
    private let state = NIOLockedValueBox(State())

    /// An empty pool.
    init() {}

    /// How many buffers the pool has allocated (a buffer used again does not count).
    var made: Int { state.withLockedValue { $0.made } }

    /// How many kept buffers got new storage when taken, because something still held theirs.
    var renewed: Int { state.withLockedValue { $0.renewed } }

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
        for attempt in 0...20 {
            // A kept buffer nothing else holds (cleared), or none kept (nil, false), or all
            // still held (nil, true).
            let found = state.withLockedValue { state -> (buffer: ByteBuffer?, held: Bool) in
                for index in state.free.indices.reversed()
                where state.free[index].modifyIfUniquelyOwned({ $0.clear(minimumCapacity: capacity) }) != nil {
                    return (state.free.remove(at: index), false)
                }
                if state.free.isEmpty { state.made += 1 }
                return (nil, !state.free.isEmpty)
            }
            if let buffer = found.buffer { return buffer }
            if !found.held { return ByteBufferAllocator().buffer(capacity: capacity) }
            if attempt < 20 { Thread.sleep(forTimeInterval: 0.001) }
        }
        // Still held: new storage for this part (copy on write), the old one goes when let go.
        guard var buffer = state.withLockedValue({ $0.free.popLast() }) else {
            return take(capacity: capacity)
        }
        buffer.clear(minimumCapacity: capacity)
        state.withLockedValue { $0.renewed += 1 }
        return buffer
    }

    /// Keeps `buffer`, whose part is sent, for a later part.
    func recycle(_ buffer: consuming ByteBuffer) {
        let kept = consume buffer
        state.withLockedValue { $0.free.append(kept) }
    }
}

extension PartBufferPool {
    /// A part's buffer handed to the task that sends it: the task takes it out, so that no
    /// closure keeps a reference to its storage once the part is sent.
    final class Handoff: Sendable {
        private let slot: NIOLockedValueBox<ByteBuffer?>

        /// Holds `buffer` until `take`.
        init(_ buffer: consuming ByteBuffer) { slot = NIOLockedValueBox(buffer) }

        /// The buffer (an empty one when taken already).
        func take() -> ByteBuffer { slot.withLockedValue { $0.take() } ?? ByteBuffer() }
    }
}
