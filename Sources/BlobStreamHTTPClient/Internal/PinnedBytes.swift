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

    /// Room for `capacity` bytes, none held yet.
    init(capacity: Int) {
        self.capacity = capacity
        // On a 64-byte boundary, as the package's other large buffers: the kernel copies from
        // (a write into a pipe) and into such memory at full speed.
        start = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(capacity, 1), alignment: 64)
            .bindMemory(to: UInt8.self, capacity: Swift.max(capacity, 1))
    }

    /// Bytes copied from `bytes`.
    convenience init(_ bytes: some Collection<UInt8>) {
        self.init(capacity: bytes.count)
        let end = UnsafeMutableBufferPointer(start: start, count: capacity).initialize(from: bytes).1
        count = end
    }

    deinit { start.deallocate() }

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
