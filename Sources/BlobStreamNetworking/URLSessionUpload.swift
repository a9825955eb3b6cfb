import BlobStream
import BlobStreamUpload
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Uploads an `UploadBody` with URLSession (FoundationNetworking), streaming it through a
/// `URLSessionBodyStream`.
///
/// Each upload gets a session of its own, since a body stream waiting for its source
/// blocks the session's work queue. The body goes out chunked (a stream body always does
/// on Linux; a Content-Length beside it makes servers answer 400). When the session needs
/// the body again (an authentication challenge) it gets a fresh stream from the start.
///
/// Redirects: FoundationNetworking on Linux follows a 307/308 with an empty body, so the
/// upload follows them itself, sending the whole body again from a fresh source (as curl
/// does), at most `UploadOptions.maxRedirects` times; other redirects are errors that name
/// them. Progress starts again from 0 on each redirect.
///
/// Early answers: a 2xx answer that arrives while the body is still being written is an
/// error giving the bytes written by then and the length, never a success. Bytes the
/// operating system has accepted for the connection count as written, so a server that
/// answers early after the whole rest of the body fit in the socket buffers cannot be told
/// apart from one that read it all.
public enum URLSessionUpload {
    /// The upload behind `URLSessionUploader`.
    static func perform(
        _ body: UploadBody, to url: URL, method: String, headers: [(name: String, value: String)],
        options: UploadOptions, progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> UploadResult {
        try UploadURL.validate(url)
        try Task.checkCancellation()
        let activity = UploadActivity()
        return try await withUploadLimits(
            url: BlobURL.redactingPasswords(url.absoluteString), options: options, activity: activity
        ) {
            var target = url
            var redirects = 0
            while true {
                let hop = try await send(
                    body, to: target, method: method,
                    headers: UploadRedirect.headers(headers, for: target, origin: url), options: options,
                    activity: activity,
                    progress: progress)
                if let next = try UploadRedirect.target(
                    status: hop.status, location: hop.location, from: target, redirects: redirects, options: options,
                    body: body, origin: url, headers: headers)
                {
                    redirects += 1
                    target = next
                    continue
                }
                guard (200..<300).contains(hop.status) else {
                    throw BlobStreamError(
                        .uploadFailed,
                        "upload to \(BlobURL.redactingPasswords(target.absoluteString)) failed: HTTP \(hop.status) \(HTTPURLResponse.localizedString(forStatusCode: hop.status))"
                    )
                }
                return UploadResult(
                    statusCode: hop.status, headers: hop.headers, body: hop.data,
                    bytesSent: activity.bodyState.sent)
            }
        }
    }

    /// One request with a fresh body: the answer's status, body and Location.
    struct Hop: Sendable {
        var status: Int
        var data: Data
        var location: String?
        var headers: [(name: String, value: String)]
    }

    private static func send(
        _ body: UploadBody, to url: URL, method: String, headers: [(name: String, value: String)],
        options: UploadOptions, activity: UploadActivity, progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> Hop {
        activity.beginAttempt()
        let delegate = Delegate(body: body, progress: progress, activity: activity)
        let configuration = URLSessionConfiguration.ephemeral
        // FoundationNetworking's own idle timer (reset as bytes move): a backstop behind
        // the watchdog of `withUploadLimits`, which reports first and names the limit.
        configuration.timeoutIntervalForRequest =
            (options.idleTimeout.seconds + options.connectTimeout.seconds).rounded(.up) + 1
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = configuration.timeoutIntervalForRequest
        for (name, value) in headers { request.addValue(value, forHTTPHeaderField: name) }
        if let contentType = body.contentType, request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        }
        let first = try delegate.makeStream()
        request.httpBodyStream = first
        let task = session.dataTask(with: request)
        delegate.watch(task)
        let (data, response, error): (Data, URLResponse?, (any Error)?) = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                delegate.onComplete = { continuation.resume(returning: ($0, $1, $2)) }
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
        try Task.checkCancellation()
        if let failure = delegate.bodyError() {
            throw BlobStreamError(
                .uploadFailed,
                "upload to \(BlobURL.redactingPasswords(url.absoluteString)) aborted: the body failed: \(failure)",
                cause: failure)
        }
        if let early = delegate.earlyAnswer {
            throw UploadRedirect.earlyAnswer(
                url: BlobURL.redactingPasswords(url.absoluteString), status: early.status, sent: early.sent,
                total: early.total)
        }
        if let error {
            throw BlobStreamError(
                .uploadFailed,
                "upload to \(BlobURL.redactingPasswords(url.absoluteString)) failed: \(error.localizedDescription)",
                cause: error)
        }
        guard let http = response as? HTTPURLResponse else {
            throw BlobStreamError(
                .uploadFailed, "upload to \(BlobURL.redactingPasswords(url.absoluteString)) got no HTTP answer")
        }
        if (200..<300).contains(http.statusCode), !activity.bodyState.complete {
            let state = activity.bodyState
            throw UploadRedirect.earlyAnswer(
                url: BlobURL.redactingPasswords(url.absoluteString), status: http.statusCode, sent: state.sent,
                total: state.total)
        }
        let fields = http.allHeaderFields.compactMap { key, value -> (name: String, value: String)? in
            guard let name = key as? String, let value = value as? String else { return nil }
            return (name, value)
        }
        return Hop(
            status: http.statusCode, data: data, location: http.value(forHTTPHeaderField: "Location"),
            headers: fields)
    }

    /// The session's delegate: fresh body streams on demand, the answer's bytes, the end;
    /// redirects are handed back to `upload` rather than followed with an empty body.
    final class Delegate: NSObject, URLSessionDataDelegate, Sendable {
        private struct State {
            var received = Data()
            var streams: [URLSessionBodyStream] = []
            var earlyAnswer: (status: Int, sent: Int64, total: Int64?)?
            weak var task: URLSessionTask?
            var onComplete: ((Data, URLResponse?, (any Error)?) -> Void)?
        }

        let body: UploadBody
        let progress: (@Sendable (UploadProgress) -> Void)?
        let activity: UploadActivity
        private let state = Locked(State())
        var onComplete: ((Data, URLResponse?, (any Error)?) -> Void)? {
            get { state.withLock { s in s.onComplete } }
            set { state.withLock { s in s.onComplete = newValue } }
        }

        init(body: UploadBody, progress: (@Sendable (UploadProgress) -> Void)?, activity: UploadActivity) {
            self.body = body
            self.progress = progress
            self.activity = activity
        }

        func makeStream() throws -> URLSessionBodyStream {
            let activity = self.activity
            let progress = self.progress
            activity.beginBody(total: body.length)
            let stream = try URLSessionBodyStream(body: body) { report in
                activity.body(sent: report.sent, finished: report.isFinished)
                progress?(report)
            }
            stream.beforeRead = { [weak self] in self?.checkAnswer() }
            state.withLock { s in s.streams.append(stream) }
            return stream
        }

        /// The task whose answer `checkAnswer()` looks at.
        func watch(_ task: URLSessionTask) {
            state.withLock { s in s.task = task }
        }

        /// Records a 2xx answer that is already here while the body is not finished, with
        /// the bytes handed over by then. The body stream calls it before each read, on the
        /// session's thread, where FoundationNetworking also sets the task's response as
        /// the head arrives: so the count is the one at the answer, not at the (later)
        /// delegate callback.
        func checkAnswer() {
            guard let task = state.withLock({ s in s.earlyAnswer == nil ? s.task : nil }),
                let http = task.response as? HTTPURLResponse, (200..<300).contains(http.statusCode)
            else { return }
            let bodyState = activity.bodyState
            guard !bodyState.complete else { return }
            state.withLock { s in
                if s.earlyAnswer == nil { s.earlyAnswer = (http.statusCode, bodyState.sent, bodyState.total) }
            }
        }

        /// The error of the last body stream, if it failed.
        func bodyError() -> (any Error)? {
            state.withLock { s in s.streams.last?.streamError }
        }

        /// A 2xx answer's head that came before the body's end: its status and the body
        /// bytes handed over by then.
        var earlyAnswer: (status: Int, sent: Int64, total: Int64?)? { state.withLock { s in s.earlyAnswer } }

        func urlSession(
            _ session: URLSession, task: URLSessionTask,
            needNewBodyStream completionHandler: @escaping (InputStream?) -> Void
        ) {
            // A fresh stream starts the body again: only for a body that is repeatable.
            let again = state.withLock { s in !s.streams.isEmpty }
            completionHandler(again && !body.isRepeatable ? nil : try? makeStream())
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
        ) {
            activity.touch()
            checkAnswer()
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            activity.touch()
            state.withLock { s in s.received.append(data) }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let (data, done) = state.withLock { s -> (Data, ((Data, URLResponse?, (any Error)?) -> Void)?) in
                let done = s.onComplete
                s.onComplete = nil
                return (s.received, done)
            }
            done?(data, task.response, error)
        }
    }
}
