import Foundation

/// The bytes of a stream or source as an `AsyncSequence` of `Data` chunks.
///
/// ```swift
/// for try await chunk in BlobChunks(dataSource: source) { hasher.update(data: chunk) }
/// ```
///
/// Blocking reads run on a serial dispatch queue of the sequence's own, never on the
/// cooperative thread pool, one chunk ahead of the consumer (so reading overlaps with
/// whatever the consumer does with the previous chunk: at most two chunks are in memory). Cancelling the task closes the stream, which wakes a read
/// waiting for the source, and the iteration throws `CancellationError`. A source error is
/// thrown as the stream's `BlobStreamError`; the end of the bytes ends the sequence.
public struct BlobChunks: AsyncSequence, Sendable {
    public typealias Element = Data

    private let buffers: BlobChunkBuffers<Data>

    /// Chunks of a stream that has not been opened or read yet; the sequence opens it,
    /// reads it (it waits for the source whatever the stream's mode) and closes it at the
    /// end. Iterate it once.
    public init(stream: BlobInputStream, chunkSize: Int = 64 * 1024) {
        buffers = BlobChunkBuffers(stream: stream, chunkSize: chunkSize) { capacity, fill in
            // Uninitialized memory, handed to `Data` without a copy: no zero-filling of
            // bytes the read overwrites at once.
            let memory = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            let count = fill(UnsafeMutableRawBufferPointer(start: memory, count: capacity))
            return Data(bytesNoCopy: memory, count: count, deallocator: .custom { pointer, _ in pointer.deallocate() })
        }
    }

    /// Chunks of a source, read through a synchronous `BlobInputStream`.
    public init(dataSource: any BlobDataSource, chunkSize: Int = 64 * 1024) {
        self.init(stream: BlobInputStream(dataSource: dataSource, mode: .synchronous), chunkSize: chunkSize)
    }

    public func makeAsyncIterator() -> Iterator { Iterator(inner: buffers.makeAsyncIterator()) }

    /// Reads the next chunk on the sequence's own queue.
    public struct Iterator: AsyncIteratorProtocol {
        var inner: BlobChunkBuffers<Data>.Iterator

        public mutating func next() async throws -> Data? { try await inner.next() }
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

    public func makeAsyncIterator() -> Iterator { Iterator(box: box, chunkSize: chunkSize) }

    /// Reads the next chunk on the sequence's own queue.
    public struct Iterator: AsyncIteratorProtocol {
        let box: StreamBox<Chunk>
        let chunkSize: Int

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
/// `close()`, which `BlobInputStream` allows from any thread; `ready` and `waiter` are
/// guarded by `lock`.
final class StreamBox<Chunk: Sendable>: @unchecked Sendable {
    let stream: BlobInputStream
    let queue = DispatchQueue(label: "BlobStream.BlobChunks")
    private let makeChunk: @Sendable (Int, BlobChunkBuffers<Chunk>.Fill) -> Chunk
    private var opened = false
    private let lock = NSLock()
    private var inFlight = false
    private var ready: Result<Chunk?, any Error>?
    private var waiter: CheckedContinuation<Result<Chunk?, any Error>, Never>?

    init(_ stream: BlobInputStream, makeChunk: @escaping @Sendable (Int, BlobChunkBuffers<Chunk>.Fill) -> Chunk) {
        self.stream = stream
        self.makeChunk = makeChunk
    }

    /// Hands the next chunk to `continuation`: the one read ahead, or the one being read.
    func take(_ size: Int, _ continuation: CheckedContinuation<Result<Chunk?, any Error>, Never>) {
        lock.lock()
        if let result = ready {
            ready = nil
            lock.unlock()
            continuation.resume(returning: result)
            readAhead(size, after: result)
            return
        }
        waiter = continuation
        let start = !inFlight
        inFlight = true
        lock.unlock()
        if start { read(size) }
    }

    /// Starts reading the chunk after `result`, unless `result` ended the sequence.
    private func readAhead(_ size: Int, after result: Result<Chunk?, any Error>) {
        guard case .success(.some) = result else { return }
        lock.lock()
        let start = !inFlight
        inFlight = true
        lock.unlock()
        if start { read(size) }
    }

    private func read(_ size: Int) {
        queue.async {
            let result = self.readChunk(size)
            self.lock.lock()
            self.inFlight = false
            if let waiter = self.waiter {
                self.waiter = nil
                self.lock.unlock()
                waiter.resume(returning: result)
                self.readAhead(size, after: result)
            } else {
                self.ready = result
                self.lock.unlock()
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
