import AsyncHTTPClient
import BlobStream
import BlobStreamUpload
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
    /// The bytes read at a time: 1 MiB. Each chunk crosses from the reading thread to the
    /// event loop once, so larger chunks mean fewer hand-offs between threads. An upload
    /// keeps up to 6 chunk buffers (4 in flight) and fills them again once sent (6 MiB with
    /// this size; `requestBody` keeps 8).
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

    /// The upload behind `HTTPClientUploader`.
    static func perform(
        _ body: UploadBody, to target: URL, method: HTTPMethod, headers: [(name: String, value: String)],
        client: HTTPClient?, options: UploadOptions, timeout: TimeAmount, mode: BlobInputStream.Mode,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> UploadResult {
        try UploadURL.validate(target)
        try Task.checkCancellation()
        // No client given: the process's shared pool for uploads with these options.
        let client =
            try client ?? HTTPClientPool.sharedForUploads(connection: connection(for: options)).client(for: target)
        let activity = UploadActivity()
        let outcome: Result<UploadResult, any Error>
        do {
            outcome = .success(
                try await withUploadLimits(
                    url: BlobURL.redactingPasswords(target.absoluteString), options: options, activity: activity
                ) {
                    try await send(
                        body, to: target, method: method, headers: headers, client: client, options: options,
                        timeout: timeout, mode: mode, activity: activity, progress: progress)
                })
        } catch {
            outcome = .failure(error)
        }
        return try outcome.get()
    }

    /// The configuration of the client an upload makes for itself.
    /// How an upload's client connects: `options.connectTimeout`, no proxy, no extra trust
    /// roots (its answer is waited for under the upload's own limits).
    static func connection(for options: UploadOptions) -> HTTPConnectionOptions {
        HTTPConnectionOptions(connectTimeout: .nanoseconds(Int64(options.connectTimeout.seconds * 1e9)))
    }

    private static func send(
        _ body: UploadBody, to url: URL, method: HTTPMethod, headers: [(name: String, value: String)],
        client: HTTPClient, options: UploadOptions, timeout: TimeAmount, mode: BlobInputStream.Mode,
        activity: UploadActivity, progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> UploadResult {
        var target = url
        var redirects = 0
        while true {
            activity.beginAttempt()
            let name = BlobURL.redactingPasswords(target.absoluteString)
            var fields = HTTPHeaders(
                UploadRedirect.headers(headers, for: target, origin: url).map { ($0.name, $0.value) })
            if let contentType = body.contentType, !fields.contains(name: "Content-Type") {
                fields.add(name: "Content-Type", value: contentType)
            }
            let failure = SourceFailure()
            let pumps = BodyPumps(failure: failure)
            // The first source is made now, so that a source that cannot be made fails here;
            // a client that asks for the body again (a redirect it follows) gets a fresh one.
            let first = FirstSource(try body.makeSource())
            // The request's task on one event loop, its connection preferably there too (the
            // pump's writes then hop to it once). A preference, not a requirement
            // (`.delegate(on:)`): AsyncHTTPClient closes a connection made for a request that
            // requires its loop as soon as it is idle, so every upload of a pool would open a
            // connection of its own (a TLS handshake each); preferred, a kept-alive
            // connection of the pool serves the next upload.
            let eventLoop = client.eventLoopGroup.any()
            let request = try HTTPClient.Request(
                url: target.absoluteString, method: method, headers: fields,
                body: .stream(contentLength: body.length) { writer in
                    activity.beginBody(total: body.length)
                    let pump = BodyPump(
                        source: first.takeOrFresh(body), mode: mode,
                        chunkSize: defaultChunkSize, total: body.length, progress: progress, activity: activity)
                    return pumps.start(pump, writer: writer, on: eventLoop)
                })
            let delegate = AnswerDelegate(method: method, total: body.length, activity: activity, pumps: pumps)
            let task = client.execute(
                request: request, delegate: delegate, eventLoop: .delegate(on: eventLoop),
                deadline: .now() + timeout)
            let answer: AnswerDelegate.Answer
            do {
                answer = try await withTaskCancellationHandler {
                    try await task.get()
                } onCancel: {
                    task.cancel()
                }
                pumps.cancel()
            } catch let error as HTTPClientError
                where error == .requestStreamCancelled && delegate.refusalBeforeEnd != nil
            {
                // The server answered a redirect or an error before the client saw the body's
                // end: that answer is what counts (a redirect is followed with a fresh body).
                pumps.cancel()
                try Task.checkCancellation()
                answer = delegate.refusalBeforeEnd!
            } catch {
                pumps.cancel()
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
                body: body, origin: url, headers: headers)
            {
                redirects += 1
                target = next
                continue
            }
            guard (200..<300).contains(status) else {
                throw BlobStreamError(
                    .uploadFailed, "upload to \(name) failed: HTTP \(status) \(answer.head.status.reasonPhrase)")
            }
            return UploadResult(
                statusCode: status, headers: answer.head.headers.map { (name: $0.name, value: $0.value) },
                body: answer.body, bytesSent: activity.bodyState.sent)
        }
    }
}
