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

    private let box: StreamBox
    private let chunkSize: Int

    /// Chunks of a stream that has not been opened or read yet; the sequence opens it,
    /// reads it (it waits for the source whatever the stream's mode) and closes it at the
    /// end. Iterate it once.
    public init(stream: BlobInputStream, chunkSize: Int = 64 * 1024) {
        precondition(chunkSize > 0, "chunkSize must be positive")
        self.box = StreamBox(stream)
        self.chunkSize = chunkSize
    }

    /// Chunks of a source, read through a synchronous `BlobInputStream`.
    public init(dataSource: any BlobDataSource, chunkSize: Int = 64 * 1024) {
        self.init(stream: BlobInputStream(dataSource: dataSource, mode: .synchronous), chunkSize: chunkSize)
    }

    public func makeAsyncIterator() -> Iterator { Iterator(box: box, chunkSize: chunkSize) }

    /// Reads the next chunk on the sequence's own queue.
    public struct Iterator: AsyncIteratorProtocol {
        let box: StreamBox
        let chunkSize: Int

        public mutating func next() async throws -> Data? {
            try Task.checkCancellation()
            let box = self.box, size = chunkSize
            let result: Result<Data?, any Error> = await withTaskCancellationHandler {
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

/// Holds the stream for `BlobChunks` and reads one chunk ahead: while the consumer works on
/// chunk N (sends it, hashes it), chunk N+1 is read on the queue.
///
/// Unchecked Sendable: the stream is used only on `queue` (one read at a time), except
/// `close()`, which `BlobInputStream` allows from any thread; `ready` and `waiter` are
/// guarded by `lock`.
final class StreamBox: @unchecked Sendable {
    let stream: BlobInputStream
    let queue = DispatchQueue(label: "BlobStream.BlobChunks")
    private var opened = false
    private let lock = NSLock()
    private var inFlight = false
    private var ready: Result<Data?, any Error>?
    private var waiter: CheckedContinuation<Result<Data?, any Error>, Never>?

    init(_ stream: BlobInputStream) { self.stream = stream }

    /// Hands the next chunk to `continuation`: the one read ahead, or the one being read.
    func take(_ size: Int, _ continuation: CheckedContinuation<Result<Data?, any Error>, Never>) {
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
    private func readAhead(_ size: Int, after result: Result<Data?, any Error>) {
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
    func readChunk(_ size: Int) -> Result<Data?, any Error> {
        if !opened {
            opened = true
            stream.open()
        }
        var data = Data(count: size)
        let n = data.withUnsafeMutableBytes { raw in
            stream.read(raw.bindMemory(to: UInt8.self).baseAddress!, maxLength: size)
        }
        if n > 0 {
            data.count = n
            return .success(data)
        }
        if n == 0 {
            stream.close()
            return .success(nil)
        }
        let error = stream.streamError
            ?? BlobStreamError(.closed, "the stream was closed before its end")
        stream.close()
        return .failure(error)
    }

    func cancel() { stream.close() }
}
