import AsyncHTTPClient
import BlobStream
import BlobStreamNetworking
import Foundation
import NIOCore
import NIOHTTP1

/// Uploads through AsyncHTTPClient: a request body streamed from any source, with its
/// length when known (Content-Length) and chunked otherwise, and the client's backpressure
/// (the next chunk is read only when the client asks for it).
public enum HTTPClientUpload {
    /// The server's answer.
    public struct Response: Sendable {
        /// The HTTP status code.
        public let statusCode: Int
        /// The answer's body (at most 1 MiB is kept).
        public let body: Data
    }

    /// The bytes read at a time: 1 MiB. Each chunk crosses from the reading queue to the
    /// event loop once, so larger chunks mean fewer hand-offs between threads. An upload
    /// keeps up to 8 chunk buffers and fills them again once sent (8 MiB with this size).
    public static let defaultChunkSize = 1 << 20

    /// An AsyncHTTPClient request body that streams a fresh source of `body`.
    ///
    /// Reads run on a dispatch queue of their own (never on the cooperative pool or an
    /// event loop), `chunkSize` bytes at a time. A source error fails the request, never
    /// ends it short; with a known length, AsyncHTTPClient also fails a body that comes out
    /// shorter or longer than announced.
    ///
    /// `mode` is the mode of the `BlobInputStream` the chunks are read through; both read
    /// the same bytes.
    public static func requestBody(
        _ body: UploadBody, chunkSize: Int = defaultChunkSize, mode: BlobInputStream.Mode = .synchronous,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) throws -> HTTPClientRequest.Body {
        try requestBody(body, chunkSize: chunkSize, mode: mode, progress: progress, failure: nil)
    }

    static func requestBody(
        _ body: UploadBody, chunkSize: Int, mode: BlobInputStream.Mode,
        progress: (@Sendable (UploadProgress) -> Void)?, failure: SourceFailure?
    ) throws -> HTTPClientRequest.Body {
        let stream = BlobInputStream(dataSource: try body.makeSource(), mode: mode)
        // The stream reads straight into each ByteBuffer's memory: no copy between the
        // read and the socket write.
        let ring = BufferRing()
        let buffers = BlobChunkBuffers(stream: stream, chunkSize: chunkSize) { capacity, fill in
            ring.fill(capacity: capacity, fill)
        }
        let chunks = ByteBufferChunks(chunks: buffers, total: body.length, progress: progress, failure: failure)
        return .stream(chunks, length: body.length.map { .known($0) } ?? .unknown)
    }

    /// Sends `body` to `url` and returns the answer.
    ///
    /// - Throws: `BlobStreamError` `.uploadFailed` naming the URL, for a non-2xx answer, a
    ///   refused or closed connection, or a source error (as the cause).
    public static func upload(
        _ body: UploadBody, to url: String, method: HTTPMethod = .PUT, headers: [(String, String)] = [],
        client: HTTPClient = .shared, timeout: TimeAmount = .hours(24), mode: BlobInputStream.Mode = .synchronous,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> Response {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let contentType = body.contentType, !request.headers.contains(name: "Content-Type") {
            request.headers.add(name: "Content-Type", value: contentType)
        }
        let failure = SourceFailure()
        request.body = try requestBody(body, chunkSize: defaultChunkSize, mode: mode, progress: progress, failure: failure)
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: timeout)
        } catch {
            if let cause = failure.error {
                throw BlobStreamError(.uploadFailed, "upload to \(url) aborted: the body failed: \(cause)", cause: cause)
            }
            throw BlobStreamError(.uploadFailed, "upload to \(url) failed: \(error)", cause: error)
        }
        var answer = try await response.body.collect(upTo: 1 << 20)
        let data = Data(answer.readBytes(length: answer.readableBytes) ?? [])
        guard (200..<300).contains(Int(response.status.code)) else {
            throw BlobStreamError(.uploadFailed, "upload to \(url) failed: HTTP \(response.status.code) \(response.status.reasonPhrase)")
        }
        return Response(statusCode: Int(response.status.code), body: data)
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
            buffers.append(allocator.buffer(capacity: capacity))
        }
        let i = next
        next = (next + 1) % count
        buffers[i].clear()
        buffers[i].writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { fill($0) }
        return buffers[i]
    }
}

/// Keeps the source's error when the body sequence throws, so that the upload's error can
/// name it rather than the client's "request cancelled". Unchecked Sendable: guarded by
/// `lock`.
final class SourceFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var _error: (any Error)?
    var error: (any Error)? { lock.withLock { _error } }
    func record(_ error: any Error) { lock.withLock { if _error == nil { _error = error } } }
}

/// The stream's chunks as `ByteBuffer`s, with progress: the finishing report comes exactly
/// once.
struct ByteBufferChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let chunks: BlobChunkBuffers<ByteBuffer>
    let total: Int64?
    let progress: (@Sendable (UploadProgress) -> Void)?
    let failure: SourceFailure?

    func makeAsyncIterator() -> Iterator {
        Iterator(inner: chunks.makeAsyncIterator(), total: total, progress: progress, failure: failure)
    }

    struct Iterator: AsyncIteratorProtocol {
        var inner: BlobChunkBuffers<ByteBuffer>.Iterator
        let total: Int64?
        let progress: (@Sendable (UploadProgress) -> Void)?
        let failure: SourceFailure?
        var sent: Int64 = 0
        var done = false

        mutating func next() async throws -> ByteBuffer? {
            guard !done else { return nil }
            let chunk: ByteBuffer?
            do {
                chunk = try await inner.next()
            } catch {
                failure?.record(error)
                throw error
            }
            guard let buffer = chunk else {
                done = true
                progress?(UploadProgress(sent: sent, total: total, isFinished: true))
                return nil
            }
            sent += Int64(buffer.readableBytes)
            progress?(UploadProgress(sent: sent, total: total, isFinished: false))
            return buffer
        }
    }
}
