import Foundation

/// The bytes of a stream or source as an `AsyncSequence` of `Data` chunks.
///
/// ```swift
/// for try await chunk in BlobChunks(dataSource: source) { hasher.update(data: chunk) }
/// ```
///
/// Blocking reads run on a serial dispatch queue of the sequence's own, never on the
/// cooperative thread pool. Cancelling the task closes the stream, which wakes a read
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
                await withCheckedContinuation { continuation in
                    box.queue.async { continuation.resume(returning: box.readChunk(size)) }
                }
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

/// Holds the stream for `BlobChunks`. Unchecked Sendable: the stream is used only on
/// `queue`, except `close()`, which `BlobInputStream` allows from any thread.
final class StreamBox: @unchecked Sendable {
    let stream: BlobInputStream
    let queue = DispatchQueue(label: "BlobStream.BlobChunks")
    private var opened = false

    init(_ stream: BlobInputStream) { self.stream = stream }

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
