import Foundation

/// The bytes of a stream or source as an `AsyncSequence` of `Data` chunks.
///
/// ```swift
/// for try await chunk in BlobChunks(dataSource: source) { hasher.update(data: chunk) }
/// ```
///
/// Blocking reads run on a serial dispatch queue of the sequence's own, never on the
/// cooperative thread pool, one block ahead of the consumer (so reading overlaps with
/// whatever the consumer does with the previous chunks). A block is about 2 MiB, a whole
/// number of chunks, read with one `read` and handed out as chunks without a copy: the hop
/// between the reading queue and the consumer (tens of microseconds) is made once per
/// block, not per chunk, so the sequence reads a file at about the rate of the stream's own
/// `read` loop. About two blocks are in memory (4 MiB), more while the consumer keeps
/// chunks (a chunk holds its whole block). A read
/// that returns fewer bytes (a slow source) gives fewer or smaller chunks at once, never a
/// wait for more. Cancelling the task closes the stream, which wakes a read waiting for the
/// source, and the iteration throws `CancellationError`. A source error is thrown as the
/// stream's `BlobStreamError` after the chunks read before it; the end of the bytes ends
/// the sequence.
public struct BlobChunks: AsyncSequence, Sendable {
    /// A chunk of bytes, in source order.
    public typealias Element = Data

    /// The size a block aims at: a whole number of chunks, at least one. (Measured on 1 GiB
    /// from the page cache in 64 KiB chunks against the stream's `read` loop: 1 MiB blocks
    /// ran at 0.79 of its rate, 2 MiB at 0.91, 4 MiB at 0.93; 2 MiB blocks on 64-byte
    /// boundaries at 0.99.)
    static let blockTarget = 1 << 21

    private let blocks: BlobChunkBuffers<[Data]>

    /// Chunks of a stream that has not been opened or read yet; the sequence opens it,
    /// reads it (it waits for the source whatever the stream's mode) and closes it at the
    /// end. Iterate it once.
    public init(stream: BlobInputStream, chunkSize: Int = 64 * 1024) {
        precondition(chunkSize > 0, "chunkSize must be positive")
        let blockSize = chunkSize * Swift.max(1, Self.blockTarget / chunkSize)
        let pool = ChunkMemoryPool(capacity: blockSize)
        blocks = BlobChunkBuffers(stream: stream, chunkSize: blockSize) { capacity, fill in
            // Uninitialized memory, handed to `Data` without a copy: no zero-filling of
            // bytes the read overwrites at once. The block goes back to the pool when its
            // last chunk is released.
            let memory = pool.take(capacity)
            let count = fill(UnsafeMutableRawBufferPointer(start: memory, count: capacity))
            let block = PooledBlock(memory, pool: pool)
            return stride(from: 0, to: count, by: chunkSize).map { offset in
                Data(
                    bytesNoCopy: memory + offset, count: Swift.min(chunkSize, count - offset),
                    deallocator: .custom { _, _ in block.keep() })
            }
        }
    }

    /// Chunks of a source, read through a synchronous `BlobInputStream`.
    public init(dataSource: any BlobDataSource, chunkSize: Int = 64 * 1024) {
        self.init(stream: BlobInputStream(dataSource: dataSource, mode: .synchronous), chunkSize: chunkSize)
    }

    /// The iterator: the stream is opened on the first `next()` and closed at the end, on an
    /// error or on cancellation.
    public func makeAsyncIterator() -> Iterator { Iterator(inner: blocks.makeAsyncIterator()) }

    /// Hands out the chunks of the current block, then reads the next block on the
    /// sequence's own queue.
    public struct Iterator: AsyncIteratorProtocol {
        var inner: BlobChunkBuffers<[Data]>.Iterator
        var pending: [Data] = []
        var index = 0

        /// The next chunk, or nil at the end of the bytes; throws the stream's error or
        /// `CancellationError`.
        public mutating func next() async throws -> Data? {
            if index < pending.count {
                try Task.checkCancellation()
                index += 1
                return pending[index - 1]
            }
            pending = []
            guard let block = try await inner.next(), let first = block.first else { return nil }
            pending = block
            index = 1
            return first
        }
    }
}

/// The bytes of a stream as an `AsyncSequence` of chunks in storage of the caller's choice,
/// filled by the stream's reads in place: `BlobChunks` with `Data` is one, and an HTTP
/// client's own buffer type (SwiftNIO's `ByteBuffer`) can be another, with no copy between
/// the read and the send.
///
/// ```swift
/// let buffers = BlobChunkBuffers(stream: stream, chunkSize: 256 * 1024) { capacity, fill in
///     var buffer = ByteBufferAllocator().buffer(capacity: capacity)
///     buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { fill($0) }
///     return buffer
/// }
/// ```
///
/// Reading, read-ahead, cancellation and errors work as for `BlobChunks`.
public struct BlobChunkBuffers<Chunk: Sendable>: AsyncSequence, Sendable {
    /// A chunk of bytes, in source order.
    public typealias Element = Chunk

    /// Reads the next bytes into the buffer it is given (at most `chunkSize` of them) and
    /// returns how many it wrote there: > 0, or 0 when there were none (the end, or an
    /// error, which the sequence then throws).
    public typealias Fill = (UnsafeMutableRawBufferPointer) -> Int

    private let box: StreamBox<Chunk>
    private let chunkSize: Int

    /// Chunks of a stream that has not been opened or read yet (see `BlobChunks`).
    ///
    /// - Parameters:
    ///   - stream: the stream to read; the sequence opens it, reads it and closes it.
    ///   - chunkSize: the most bytes in one chunk.
    ///   - makeChunk: makes a chunk able to hold `capacity` bytes and calls `fill`
    ///     exactly once with its writable memory (at least `capacity` bytes), keeping the
    ///     count `fill` returns as the chunk's size. Runs on the sequence's queue.
    public init(
        stream: BlobInputStream, chunkSize: Int = 64 * 1024,
        makeChunk: @escaping @Sendable (_ capacity: Int, _ fill: Fill) -> Chunk
    ) {
        precondition(chunkSize > 0, "chunkSize must be positive")
        self.box = StreamBox(stream, makeChunk: makeChunk)
        self.chunkSize = chunkSize
    }

    /// The iterator: the stream is opened on the first `next()` and closed at the end, on an
    /// error or on cancellation.
    public func makeAsyncIterator() -> Iterator { Iterator(box: box, chunkSize: chunkSize) }

    /// Reads the next chunk on the sequence's own queue.
    public struct Iterator: AsyncIteratorProtocol {
        let box: StreamBox<Chunk>
        let chunkSize: Int

        /// The next chunk, or nil at the end of the bytes; throws the stream's error or
        /// `CancellationError`.
        public mutating func next() async throws -> Chunk? {
            try Task.checkCancellation()
            let box = self.box
            let size = chunkSize
            let result: Result<Chunk?, any Error> = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in box.take(size, continuation) }
            } onCancel: {
                box.cancel()
            }
            if Task.isCancelled {
                box.cancel()
                throw CancellationError()
            }
            return try result.get()
        }
    }
}

/// Holds the stream for `BlobChunkBuffers` and reads one chunk ahead: while the consumer works on
/// chunk N (sends it, hashes it), chunk N+1 is read on the queue.
///
/// Unchecked Sendable: the stream is used only on `queue` (one read at a time), except
/// `close()`, which `BlobInputStream` allows from any thread; `opened` is used only on
/// `queue`; the rest of the mutable state is in `state`.
final class StreamBox<Chunk: Sendable>: @unchecked Sendable {
    let stream: BlobInputStream
    let queue = DispatchQueue(label: "BlobStream.BlobChunks")
    private let makeChunk: @Sendable (Int, BlobChunkBuffers<Chunk>.Fill) -> Chunk
    private var opened = false
    private let state = Locked(State())

    /// Whether a read is under way, the chunk read ahead, and the consumer waiting for one.
    private struct State {
        var inFlight = false
        var ready: Result<Chunk?, any Error>?
        var waiter: CheckedContinuation<Result<Chunk?, any Error>, Never>?
    }

    init(_ stream: BlobInputStream, makeChunk: @escaping @Sendable (Int, BlobChunkBuffers<Chunk>.Fill) -> Chunk) {
        self.stream = stream
        self.makeChunk = makeChunk
    }

    /// Hands the next chunk to `continuation`: the one read ahead, or the one being read.
    func take(_ size: Int, _ continuation: CheckedContinuation<Result<Chunk?, any Error>, Never>) {
        let (result, start) = state.withLock { s -> (Result<Chunk?, any Error>?, Bool) in
            if let result = s.ready {
                s.ready = nil
                return (result, false)
            }
            s.waiter = continuation
            let start = !s.inFlight
            s.inFlight = true
            return (nil, start)
        }
        if let result {
            continuation.resume(returning: result)
            readAhead(size, after: result)
            return
        }
        if start { read(size) }
    }

    /// Starts reading the chunk after `result`, unless `result` ended the sequence.
    private func readAhead(_ size: Int, after result: Result<Chunk?, any Error>) {
        guard case .success(.some) = result else { return }
        let start = state.withLock { s in
            let start = !s.inFlight
            s.inFlight = true
            return start
        }
        if start { read(size) }
    }

    private func read(_ size: Int) {
        queue.async {
            let result = self.readChunk(size)
            let waiter = self.state.withLock { s in
                s.inFlight = false
                guard let waiter = s.waiter else {
                    s.ready = result
                    return nil as CheckedContinuation<Result<Chunk?, any Error>, Never>?
                }
                s.waiter = nil
                return waiter
            }
            if let waiter {
                waiter.resume(returning: result)
                self.readAhead(size, after: result)
            }
        }
    }

    /// Runs on `queue`.
    func readChunk(_ size: Int) -> Result<Chunk?, any Error> {
        if !opened {
            opened = true
            stream.open()
        }
        var n = 0
        var filled = false
        let chunk = makeChunk(size) { raw in
            precondition(!filled && raw.count >= size, "makeChunk must call fill once, with at least chunkSize bytes")
            filled = true
            n = stream.read(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: size)
            return max(n, 0)
        }
        precondition(filled, "makeChunk must call fill")
        if n > 0 { return .success(chunk) }
        if n == 0 {
            stream.close()
            return .success(nil)
        }
        let error =
            stream.streamError
            ?? BlobStreamError(.closed, "the stream was closed before its end")
        stream.close()
        return .failure(error)
    }

    func cancel() { stream.close() }
}

/// The memory of `BlobChunks` blocks whose chunks were all released, kept for the next
/// blocks: a fresh block of 2 MiB is a fresh mapping whose pages fault in one by one.
/// Keeps at most `kept` blocks; the rest, and all of them when the last chunk and the
/// sequence are gone, are freed.
final class ChunkMemoryPool: Sendable {
    private static let kept = 2
    /// The size of the pooled blocks (the sequence's chunk size).
    let capacity: Int
    /// Addresses of free blocks (as integers: raw pointers are not `Sendable`).
    private let free = Locked<[UInt]>([])

    init(capacity: Int) { self.capacity = capacity }

    /// A block of at least `size` bytes.
    func take(_ size: Int) -> UnsafeMutableRawPointer {
        if size == capacity, let address = free.withLock({ $0.popLast() }) {
            return UnsafeMutableRawPointer(bitPattern: address)!
        }
        // 64-byte aligned: the kernel's copy into a block (a file's pread) ran at a fifth of
        // its speed into malloc's 16-byte-aligned large blocks on an x86-64 measured (1 GiB
        // from the page cache: 0.69 s against 0.13 s at 32 or 64).
        return .allocate(byteCount: size, alignment: 64)
    }

    /// Takes back a block `take` made (freed when the pool is full).
    func give(_ block: UnsafeMutableRawPointer) {
        let address = UInt(bitPattern: block)
        let pooled = free.withLock { blocks in
            guard blocks.count < Self.kept else { return false }
            blocks.append(address)
            return true
        }
        if !pooled { block.deallocate() }
    }

    deinit {
        free.withLock { blocks in
            for address in blocks { UnsafeMutableRawPointer(bitPattern: address)!.deallocate() }
            blocks.removeAll()
        }
    }
}

/// One block of a `BlobChunks`: the chunks cut from it hold it (through their deallocator),
/// and the last one released gives its memory back to the pool. Its address is kept as an
/// integer (raw pointers are not `Sendable`).
final class PooledBlock: Sendable {
    private let address: UInt
    private let pool: ChunkMemoryPool

    init(_ memory: UnsafeMutableRawPointer, pool: ChunkMemoryPool) {
        self.address = UInt(bitPattern: memory)
        self.pool = pool
    }

    /// Called by each chunk's deallocator: the block lives while a chunk holds this call.
    func keep() {}

    deinit { pool.give(UnsafeMutableRawPointer(bitPattern: address)!) }
}
