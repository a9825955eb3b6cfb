import BlobStream
import Foundation

/// Bytes in memory that stays where it is for the object's life: a block of an answer that
/// `HTTPRangeDataSource.getBuffer` can lend (an `Array`'s storage may only be pointed at
/// inside `withUnsafeBufferPointer`). Filled once, by the one thread that owns it at the
/// time (the event loop collecting an answer, or the reader), then only read.
/// Unchecked Sendable: it is handed from the filling thread to the reader through a lock or
/// condition (`RangeFetch`), and never written after that.
final class PinnedBytes: RandomAccessCollection, @unchecked Sendable {
    /// The first byte.
    let start: UnsafeMutablePointer<UInt8>
    /// How many bytes it can hold.
    let capacity: Int
    /// How many it holds.
    private(set) var count: Int = 0
    /// Where the memory goes back when this is released (nil: it is freed).
    private let pool: BlockMemory?

    /// Room for `capacity` bytes, none held yet: memory from `pool` when one is given (used
    /// again once this is released), else of its own.
    init(capacity: Int, from pool: BlockMemory? = nil) {
        self.capacity = capacity
        self.pool = pool
        start = pool?.take(capacity) ?? BlockMemory.allocate(capacity)
        // (A pool's block may be larger: sizes go by 64 KiB classes.)
    }

    /// Bytes copied from `bytes`.
    convenience init(_ bytes: some Collection<UInt8>) {
        self.init(capacity: bytes.count)
        let end = UnsafeMutableBufferPointer(start: start, count: capacity).initialize(from: bytes).1
        count = end
    }

    deinit {
        if let pool { pool.give(start, holding: capacity) } else { BlockMemory.release(start, capacity) }
    }

    /// Appends as many of `bytes` as there is room for; returns how many.
    @discardableResult
    func append(_ bytes: UnsafeRawBufferPointer) -> Int {
        let n = Swift.min(bytes.count, capacity - count)
        if n > 0 { (start + count).update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: n) }
        count += n
        return n
    }

    /// Marks the first `count` bytes held (after they were written through `start`).
    func setCount(_ count: Int) {
        precondition(count >= 0 && count <= capacity)
        self.count = count
    }

    var startIndex: Int { 0 }
    var endIndex: Int { count }
    subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < count, "index out of range")
        return start[position]
    }

    /// The bytes held, to read (valid while `self` lives).
    var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: start, count: count) }

    func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        try body(buffer)
    }
}

/// The memory of one source's blocks, used again: a block released (read, or dropped after
/// a jump) gives its memory back, and the next block of the same size takes it. A long read
/// then allocates the blocks in flight once, instead of mapping and faulting in 8 MiB of
/// fresh pages per block, and its peak memory stays at the blocks in flight. Keeps at most
/// `keep` free blocks; frees them when the last block and the source are gone.
final class BlockMemory: Sendable {
    /// The free blocks: their addresses (plain integers, which the lock can hand out) and sizes.
    private struct Free {
        var blocks: [(address: UInt, size: Int)] = []
    }
    private let free = Locked(Free())
    private let keep: Int

    /// A pool that keeps at most `keep` free blocks.
    init(keep: Int) { self.keep = keep }

    deinit {
        free.withLock { free in
            for block in free.blocks {
                if let start = UnsafeMutablePointer<UInt8>(bitPattern: block.address) {
                    Self.release(start, block.size)
                }
            }
        }
    }

    /// The size of the memory that holds `capacity` bytes: the next 64 KiB past it, so that a
    /// block of `blockSize` bytes (the first) and one of `blockSize + 1` (a GET's room for a
    /// byte too many) use the same memory.
    static func sizeClass(_ capacity: Int) -> Int { (capacity / (64 << 10) + 1) * (64 << 10) }

    /// Memory for `capacity` bytes: a free block of its size class, else new.
    func take(_ capacity: Int) -> UnsafeMutablePointer<UInt8> {
        let size = Self.sizeClass(capacity)
        let reused = free.withLock { free -> UInt? in
            guard let at = free.blocks.firstIndex(where: { $0.size == size }) else { return nil }
            return free.blocks.remove(at: at).address
        }
        return reused.flatMap { UnsafeMutablePointer(bitPattern: $0) } ?? Self.allocate(size)
    }

    /// Takes back the memory of a block that held up to `capacity` bytes (frees it when
    /// `keep` are free already).
    func give(_ start: UnsafeMutablePointer<UInt8>, holding capacity: Int) {
        let address = UInt(bitPattern: start)
        let kept = free.withLock { free -> Bool in
            guard free.blocks.count < keep else { return false }
            free.blocks.append((address, Self.sizeClass(capacity)))
            return true
        }
        if !kept { Self.release(start, Self.sizeClass(capacity)) }
    }

    /// New memory for `capacity` bytes, on a 64-byte boundary, as the package's other large
    /// buffers: the kernel copies from (a write into a pipe) and into such memory at full speed.
    ///
    /// From `largeBlock` bytes on, the memory is mapped from the kernel (`mmap`) and given
    /// back (`munmap`) at release, not taken from malloc: blocks of growing sizes (a read that
    /// ramps up after a jump) freed in turn raise glibc's mmap threshold, after which malloc
    /// serves such blocks from its per-thread arenas and keeps them (a remote tar.gz read
    /// peaked at 223 MiB instead of 72 MiB).
    static func allocate(_ capacity: Int) -> UnsafeMutablePointer<UInt8> {
        if capacity >= largeBlock {
            // As malloc, the process cannot go on without its memory.
            guard let mapped = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                mapped != MAP_FAILED
            else { fatalError("out of memory: a block of \(capacity) bytes could not be mapped") }
            return mapped.bindMemory(to: UInt8.self, capacity: capacity)
        }
        return UnsafeMutableRawPointer.allocate(byteCount: Swift.max(capacity, 1), alignment: 64)
            .bindMemory(to: UInt8.self, capacity: Swift.max(capacity, 1))
    }

    /// Gives back memory `allocate(capacity)` returned (with the same `capacity`).
    static func release(_ start: UnsafeMutablePointer<UInt8>, _ capacity: Int) {
        if capacity >= largeBlock {
            munmap(UnsafeMutableRawPointer(start), capacity)
        } else {
            start.deallocate()
        }
    }

    /// The size from which blocks are mapped from the kernel.
    static let largeBlock = 256 << 10
}
