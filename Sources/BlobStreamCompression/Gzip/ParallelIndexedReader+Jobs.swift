import BlobStream
import Foundation

/// A job's compressed bytes: read in by the owner before the job is queued, only read after.
///
/// Not an array: its memory starts on a 64-byte boundary, which the kernel fills (a file's
/// `pread`) at full speed; it copied into malloc's 16-byte-aligned large blocks at a fifth
/// of that speed on an x86-64 measured. Left uninitialized until read in.
final class JobInput: @unchecked Sendable {
    // Unchecked Sendable: written by the owner before the job is shared, then only read.
    /// The first byte.
    let start: UnsafeMutableRawPointer
    /// How many bytes it holds.
    let count: Int

    /// The bytes, as a buffer (valid while the input lives).
    let buffer: UnsafeBufferPointer<UInt8>

    init(count: Int) {
        self.count = count
        start = .allocate(byteCount: Swift.max(count, 1), alignment: 64)
        buffer = UnsafeBufferPointer(start: start.bindMemory(to: UInt8.self, capacity: count), count: count)
    }

    /// Calls `body` with the bytes.
    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(buffer) }
    }

    deinit { start.deallocate() }
}

/// Output buffers of decoded jobs, kept for later jobs up to a bound: a fresh buffer costs a
/// page fault (and the kernel's zeroing) per 4 KiB, about a tenth of decoding's CPU time.
final class JobBufferPool: Sendable {
    private let state = Locked(State())
    private let keepAtMost: Int

    /// A kept buffer.
    private typealias Buffer = (pointer: UnsafeMutablePointer<UInt8>, capacity: Int)

    /// The buffers kept, and how many bytes they hold.
    private struct State {
        var free: [Buffer] = []
        var kept = 0
    }

    init(keepingAtMost bytes: Int) { keepAtMost = bytes }

    deinit { state.withLock { s in for buffer in s.free { buffer.pointer.deallocate() } } }

    /// A buffer of at least `capacity` bytes, and its capacity: the smallest kept one that
    /// fits, or a new one rounded up to the next MiB (chunks just over the spacing then fit
    /// the buffers of their neighbours). A miss frees a kept buffer, so that buffers too small
    /// for the chunks to come do not stay.
    func take(capacity: Int) -> (UnsafeMutablePointer<UInt8>, Int) {
        let (found, dropped) = state.withLock { s -> (Buffer?, Buffer?) in
            let fitting = s.free.indices.filter { s.free[$0].capacity >= capacity }
            if let i = fitting.min(by: { s.free[$0].capacity < s.free[$1].capacity }) {
                let buffer = s.free.remove(at: i)
                s.kept -= buffer.capacity
                return (buffer, nil)
            }
            let dropped = s.free.popLast()
            s.kept -= dropped?.capacity ?? 0
            return (nil, dropped)
        }
        if let found { return (found.pointer, found.capacity) }
        dropped?.pointer.deallocate()
        let size = (max(capacity, Int(ParallelIndexedReader.jobTarget)) + (1 << 20)) & ~((1 << 20) - 1)
        return (.allocate(capacity: size), size)
    }

    /// Keeps `pointer` for a later job, or frees it when the pool holds enough.
    func give(_ pointer: UnsafeMutablePointer<UInt8>, capacity: Int) {
        let pooled = state.withLock { s in
            guard s.kept + capacity <= keepAtMost else { return false }
            s.free.append((pointer, capacity))
            s.kept += capacity
            return true
        }
        if !pooled { pointer.deallocate() }
    }
}
