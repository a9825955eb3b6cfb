import AsyncHTTPClient
import BlobStream
import BlobStreamNetworking
import Foundation
import NIOCore
import NIOHTTP1

/// Uploads through AsyncHTTPClient: a request body streamed from any source, with its
/// length when known (Content-Length) and chunked otherwise, and the client's backpressure
/// (the next chunk is read only when the client asks for it).
///
/// Early answers: a 2xx answer that arrives while the body is still being written is an
/// error giving the bytes written by then and the length, never a success. Bytes the
/// operating system has accepted for the connection count as written, so a server that
/// answers early after the whole rest of the body fit in the socket buffers cannot be told
/// apart from one that read it all.
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
        progress: (@Sendable (UploadProgress) -> Void)?, failure: SourceFailure?, activity: UploadActivity? = nil
    ) throws -> HTTPClientRequest.Body {
        // The first source is made now, so that a source that cannot be made fails here;
        // an iteration after the first (a client following a redirect) makes a fresh one.
        let first = FirstSource(try body.makeSource())
        let chunks = ByteBufferChunks(
            body: body, first: first, chunkSize: chunkSize, mode: mode, progress: progress, failure: failure,
            activity: activity)
        return .stream(chunks, length: body.length.map { .known($0) } ?? .unknown)
    }

    /// Sends `body` to `url` and returns the answer.
    ///
    /// Without `client`, the upload runs on a client of its own, configured from
    /// `options`: its connect timeout, no retries after a refused connection (it fails at
    /// once), and redirects handled here: a 307 or 308 sends the whole body again from a
    /// fresh source, at most `options.maxRedirects` times; other redirects are errors that
    /// name them. With a `client` of yours, its own configuration applies to connecting and
    /// redirects (a redirect it follows also gets the whole body from a fresh source; one
    /// it follows with GET and no body is an error); the idle timeout, cancellation and the
    /// checks of the answer apply either way. Progress starts again from 0 on a redirect.
    ///
    /// - Parameters:
    ///   - timeout: the longest the whole request may take.
    ///   - options: the connect and idle timeouts and the redirects followed.
    /// - Throws: `BlobStreamError`, naming the URL: `.malformedURL` for a URL no upload can
    ///   go to (checked before any I/O, see `UploadURL`); `.timedOut` when a limit of
    ///   `options` passed; `.uploadFailed` for a non-2xx answer, a 2xx answer before the
    ///   whole body was sent (with bytes sent / length), a redirect not followed, a refused
    ///   or closed connection, or a source error (as the cause). `CancellationError` when
    ///   the task is cancelled (the upload ends at once).
    public static func upload(
        _ body: UploadBody, to url: String, method: HTTPMethod = .PUT, headers: [(String, String)] = [],
        client: HTTPClient? = nil, options: UploadOptions = UploadOptions(), timeout: TimeAmount = .hours(24),
        mode: BlobInputStream.Mode = .synchronous, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> Response {
        let target = try UploadURL.validate(url)
        try Task.checkCancellation()
        let own =
            client == nil
            ? HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration(for: options)) : nil
        let activity = UploadActivity()
        let outcome: Result<Response, any Error>
        do {
            let client = client ?? own!
            outcome = .success(
                try await withUploadLimits(url: url, options: options, activity: activity) {
                    try await send(
                        body, to: target, method: method, headers: headers, client: client, options: options,
                        timeout: timeout, mode: mode, activity: activity, progress: progress)
                })
        } catch {
            outcome = .failure(error)
        }
        if let own { try? await own.shutdown() }
        return try outcome.get()
    }

    /// The configuration of the client an upload makes for itself.
    static func configuration(for options: UploadOptions) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .nanoseconds(Int64(options.connectTimeout.seconds * 1e9)))
        configuration.connectionPool.retryConnectionEstablishment = false
        return configuration
    }

    private static func send(
        _ body: UploadBody, to url: URL, method: HTTPMethod, headers: [(String, String)], client: HTTPClient,
        options: UploadOptions, timeout: TimeAmount, mode: BlobInputStream.Mode, activity: UploadActivity,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> Response {
        var target = url
        var redirects = 0
        while true {
            activity.beginAttempt()
            let name = target.absoluteString
            var fields = HTTPHeaders(headers)
            if let contentType = body.contentType, !fields.contains(name: "Content-Type") {
                fields.add(name: "Content-Type", value: contentType)
            }
            let failure = SourceFailure()
            let writers = BodyWriters()
            // The first source is made now, so that a source that cannot be made fails here.
            let chunks = ByteBufferChunks(
                body: body, first: FirstSource(try body.makeSource()), chunkSize: defaultChunkSize, mode: mode,
                progress: progress, failure: failure, activity: activity)
            let eventLoop = client.eventLoopGroup.any()
            let request = try HTTPClient.Request(
                url: name, method: method, headers: fields,
                body: .stream(contentLength: body.length) { writer in
                    writers.start(chunks, writer: writer, on: eventLoop)
                })
            let delegate = AnswerDelegate(method: method, total: body.length, activity: activity)
            let task = client.execute(request: request, delegate: delegate, deadline: .now() + timeout)
            let answer: AnswerDelegate.Answer
            do {
                answer = try await withTaskCancellationHandler {
                    try await task.get()
                } onCancel: {
                    task.cancel()
                }
                writers.cancel()
            } catch {
                writers.cancel()
                try Task.checkCancellation()
                if let cause = failure.error {
                    throw BlobStreamError(
                        .uploadFailed, "upload to \(name) aborted: the body failed: \(cause)", cause: cause)
                }
                if let early = delegate.earlyAnswer {
                    throw UploadRedirect.earlyAnswer(
                        url: name, status: early.status, sent: early.sent, total: body.length)
                }
                if let error = error as? HTTPClientError, error == .connectTimeout {
                    throw BlobStreamError(
                        .timedOut,
                        "upload to \(name) timed out: no connection within \(options.connectTimeout.secondsText) (connect timeout)",
                        cause: error)
                }
                throw BlobStreamError(.uploadFailed, "upload to \(name) failed: \(error)", cause: error)
            }
            if let early = delegate.earlyAnswer {
                throw UploadRedirect.earlyAnswer(url: name, status: early.status, sent: early.sent, total: body.length)
            }
            // A client of the caller's may have followed a redirect itself with another
            // method (GET, without the body).
            if let changed = delegate.otherMethod {
                throw BlobStreamError(
                    .uploadFailed,
                    "upload to \(name) failed: a redirect was followed to \(changed.uri) with \(changed.method.rawValue), without the body"
                )
            }
            let status = Int(answer.head.status.code)
            if let next = try UploadRedirect.target(
                status: status, location: answer.head.headers.first(name: "Location"), from: target,
                redirects: redirects, options: options,
                body: body)
            {
                redirects += 1
                target = next
                continue
            }
            guard (200..<300).contains(status) else {
                throw BlobStreamError(
                    .uploadFailed, "upload to \(name) failed: HTTP \(status) \(answer.head.status.reasonPhrase)")
            }
            return Response(statusCode: status, body: answer.body)
        }
    }
}

/// Writes the body's chunks to AsyncHTTPClient's stream writer from a task of its own,
/// a few writes in flight at a time; `cancel()` stops the writing (the request ended).
/// Unchecked Sendable: guarded by `lock`.
final class BodyWriters: @unchecked Sendable {
    private let lock = NSLock()
    private var tasks: [Task<Void, Never>] = []
    private var cancelled = false

    /// Starts writing a fresh iteration of `chunks` (the client calls this once per
    /// request it sends: again after a redirect it follows).
    func start(_ chunks: ByteBufferChunks, writer: HTTPClient.Body.StreamWriter, on eventLoop: any EventLoop)
        -> EventLoopFuture<Void>
    {
        let promise = eventLoop.makePromise(of: Void.self)
        let task = Task {
            var iterator = chunks.makeAsyncIterator()
            var inFlight: [EventLoopFuture<Void>] = []
            do {
                while let chunk = try await iterator.next() {
                    inFlight.append(writer.write(.byteBuffer(chunk)))
                    if inFlight.count >= 4 { try await inFlight.removeFirst().get() }
                }
                for write in inFlight { try await write.get() }
                promise.succeed()
            } catch {
                promise.fail(error)
            }
        }
        let stop = lock.withLock { () -> Bool in
            tasks.append(task)
            return cancelled
        }
        if stop { task.cancel() }
        return promise.futureResult
    }

    func cancel() {
        let all = lock.withLock { () -> [Task<Void, Never>] in
            cancelled = true
            return tasks
        }
        for task in all { task.cancel() }
    }
}

/// Receives the answer on the event loop, where the body's writes are reported too: a 2xx
/// head that arrives before the last body byte was written is recorded as an early answer,
/// with the bytes written by then. Unchecked Sendable: guarded by `lock`.
final class AnswerDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    struct Answer: Sendable {
        var head: HTTPResponseHead
        var body: Data
    }

    private let method: HTTPMethod
    private let total: Int64?
    private let activity: UploadActivity
    private let lock = NSLock()
    private var written: Int64 = 0
    private var requestSent = false
    private var head: HTTPResponseHead?
    private var body = Data()
    private var _earlyAnswer: (status: Int, sent: Int64)?
    private var _otherMethod: HTTPRequestHead?

    init(method: HTTPMethod, total: Int64?, activity: UploadActivity) {
        self.method = method
        self.total = total
        self.activity = activity
    }

    /// A 2xx head that came before the last body byte was written, and the bytes by then.
    var earlyAnswer: (status: Int, sent: Int64)? { lock.withLock { _earlyAnswer } }
    /// A request the client sent with a method other than the upload's (a redirect it
    /// followed with GET).
    var otherMethod: HTTPRequestHead? { lock.withLock { _otherMethod } }

    func didSendRequestHead(task: HTTPClient.Task<Answer>, _ head: HTTPRequestHead) {
        lock.withLock {
            written = 0
            requestSent = false
            if head.method != method, _otherMethod == nil { _otherMethod = head }
        }
    }

    func didSendRequestPart(task: HTTPClient.Task<Answer>, _ part: IOData) {
        lock.withLock { written += Int64(part.readableBytes) }
        activity.touch()
    }

    func didSendRequest(task: HTTPClient.Task<Answer>) {
        lock.withLock { requestSent = true }
    }

    func didReceiveHead(task: HTTPClient.Task<Answer>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        activity.touch()
        lock.withLock {
            self.head = head
            body = Data()
            // With a known length the last byte written completes the body; a chunked body
            // needs its terminating chunk, which comes with `didSendRequest`.
            let complete = requestSent || (total != nil && written >= total!)
            if (200..<300).contains(Int(head.status.code)), !complete, _earlyAnswer == nil {
                _earlyAnswer = (Int(head.status.code), written)
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Answer>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        activity.touch()
        lock.withLock {
            if body.count < 1 << 20 { body.append(contentsOf: buffer.readableBytesView.prefix((1 << 20) - body.count)) }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Answer>) throws -> Answer {
        try lock.withLock {
            guard let head else { throw HTTPClientError.remoteConnectionClosed }
            return Answer(head: head, body: body)
        }
    }
}

/// The source made when the body was built, handed to the first iteration only.
/// Unchecked Sendable: guarded by `lock`.
final class FirstSource: @unchecked Sendable {
    private let lock = NSLock()
    private var source: (any BlobDataSource)?
    init(_ source: any BlobDataSource) { self.source = source }
    func take() -> (any BlobDataSource)? {
        lock.withLock {
            defer { source = nil }
            return source
        }
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
        let source: Result<any BlobDataSource, any Error>
        if let made = first.take() {
            source = .success(made)
        } else if !body.isRepeatable {
            // A client following a redirect asks again: the rest of a pipe is not the body.
            source = .failure(body.notRepeatable)
        } else {
            source = Result(catching: { try body.makeSource() })
        }
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
