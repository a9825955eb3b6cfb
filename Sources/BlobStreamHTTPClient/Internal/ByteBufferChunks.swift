import BlobStream
import BlobStreamUpload
import Foundation
import NIOCore

// The body as an `AsyncSequence` of `ByteBuffer`s, for `HTTPClientUpload.requestBody`
// (AsyncHTTPClient's `HTTPClientRequest`). Threads: each chunk is read on the sequence's
// queue (`BlobChunkBuffers`, one chunk ahead), handed to the task that iterates the
// sequence, which the client then hands to the event loop. `HTTPClientUploader` sends
// through `BodyPump` instead, with one hand-off per chunk.

/// The source made when the body was built, handed to the first iteration only.
final class FirstSource: Sendable {
    private let source: Locked<(any BlobDataSource)?>
    init(_ source: any BlobDataSource) { self.source = Locked(source) }
    func take() -> (any BlobDataSource)? {
        source.withLock { source in
            defer { source = nil }
            return source
        }
    }

    /// The first source the first time; later (a client that asks for the body again, for
    /// a redirect it follows) a fresh source of `body`, or the error `notRepeatable` for a
    /// body that cannot start again (the rest of a pipe is not the body).
    func takeOrFresh(_ body: UploadBody) -> Result<any BlobDataSource, any Error> {
        if let source = take() { return .success(source) }
        guard body.isRepeatable else { return .failure(body.notRepeatable) }
        return Result { try body.makeSource() }
    }
}

/// Chunk buffers used again once the client has sent them.
///
/// A fresh 1 MiB buffer per chunk costs page faults: the allocator hands the memory back to
/// the kernel when it is freed, and the next chunk faults it in again (measured: 40,000 to
/// 75,000 faults per GiB sent, about a fifth of the client's CPU time). The ring keeps
/// `count` buffers and refills the oldest. A buffer the client still holds is never
/// overwritten: `ByteBuffer` is copy-on-write, so writing into a shared one moves the
/// write to new memory first.
///
/// Unchecked Sendable: used only on the chunk sequence's serial queue.
final class BufferRing: @unchecked Sendable {
    private let allocator = ByteBufferAllocator()
    private var buffers: [ByteBuffer] = []
    private var next = 0
    private let count: Int

    init(count: Int = 8) { self.count = count }

    /// A buffer of at least `capacity` bytes filled by `fill`.
    func fill(capacity: Int, _ fill: BlobChunkBuffers<ByteBuffer>.Fill) -> ByteBuffer {
        if buffers.count < count {
            buffers.append(allocator.buffer(capacity: capacity + ByteBuffer.alignmentSlack))
        }
        let i = next
        next = (next + 1) % count
        buffers[i].clear()
        buffers[i].alignStartForKernelCopies()
        buffers[i].writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { fill($0) }
        return buffers[i]
    }
}

/// Keeps the source's error when the body sequence throws, so that the upload's error can
/// name it rather than the client's "request cancelled".
final class SourceFailure: Sendable {
    private let _error = Locked<(any Error)?>(nil)
    var error: (any Error)? { _error.withLock { e in e } }
    func record(_ error: any Error) { _error.withLock { e in if e == nil { e = error } } }
}

/// The body's chunks as `ByteBuffer`s, with progress. Each iteration reads a source of
/// its own from the start (the first the one made with the body, later ones fresh: a
/// client that follows a redirect iterates again), so a body sent again is sent whole. The
/// finishing report comes once per iteration that reaches the end.
struct ByteBufferChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let body: UploadBody
    let first: FirstSource
    let chunkSize: Int
    let mode: BlobInputStream.Mode
    let progress: (@Sendable (UploadProgress) -> Void)?
    let failure: SourceFailure?
    let activity: UploadActivity?

    func makeAsyncIterator() -> Iterator {
        activity?.beginBody(total: body.length)
        let source = first.takeOrFresh(body)
        let inner = source.map { source in
            let stream = BlobInputStream(dataSource: source, mode: mode)
            // The stream reads straight into each ByteBuffer's memory: no copy between the
            // read and the socket write.
            let ring = BufferRing()
            return BlobChunkBuffers(stream: stream, chunkSize: chunkSize) { capacity, fill in
                ring.fill(capacity: capacity, fill)
            }.makeAsyncIterator()
        }
        return Iterator(inner: inner, total: body.length, progress: progress, failure: failure, activity: activity)
    }

    struct Iterator: AsyncIteratorProtocol {
        var inner: Result<BlobChunkBuffers<ByteBuffer>.Iterator, any Error>
        let total: Int64?
        let progress: (@Sendable (UploadProgress) -> Void)?
        let failure: SourceFailure?
        let activity: UploadActivity?
        var sent: Int64 = 0
        var done = false

        mutating func next() async throws -> ByteBuffer? {
            guard !done else { return nil }
            let chunk: ByteBuffer?
            do {
                var iterator = try inner.get()
                chunk = try await iterator.next()
                inner = .success(iterator)
            } catch {
                failure?.record(error)
                throw error
            }
            guard let buffer = chunk else {
                done = true
                activity?.body(sent: sent, finished: true)
                progress?(UploadProgress(sent: sent, total: total, isFinished: true))
                return nil
            }
            sent += Int64(buffer.readableBytes)
            activity?.body(sent: sent, finished: false)
            progress?(UploadProgress(sent: sent, total: total, isFinished: false))
            return buffer
        }
    }
}
