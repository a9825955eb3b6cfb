import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension BlobStreamError.Code {
    /// An upload did not complete: the server answered with a non-2xx status, refused or
    /// closed the connection, or the body's source failed.
    public static let uploadFailed = BlobStreamError.Code("uploadFailed")
}

/// Uploads an `UploadBody` with URLSession (FoundationNetworking), streaming it through a
/// `URLSessionBodyStream`.
///
/// Each upload gets a session of its own, since a body stream waiting for its source
/// blocks the session's work queue. The body goes out chunked (a stream body always does
/// on Linux; a Content-Length beside it makes servers answer 400). When the session needs
/// the body again (a redirect, an authentication challenge) it gets a fresh stream from
/// the start.
public enum URLSessionUpload {
    /// The server's answer.
    public struct Response: Sendable {
        /// The HTTP status code.
        public let statusCode: Int
        /// The answer's body.
        public let body: Data
    }

    /// Sends `body` to `url` and returns the answer.
    ///
    /// - Throws: `BlobStreamError` `.uploadFailed` naming the URL: a non-2xx status, a
    ///   refused or closed connection, or the source's error (as the cause) when the body
    ///   failed part-way, in which case the upload was aborted, never completed short.
    public static func upload(
        _ body: UploadBody, to url: URL, method: String = "PUT", headers: [String: String] = [:],
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> Response {
        let delegate = Delegate(body: body, progress: progress)
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let contentType = body.contentType, request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        }
        let first = try delegate.makeStream()
        request.httpBodyStream = first
        let task = session.dataTask(with: request)
        let (data, response, error): (Data, URLResponse?, (any Error)?) = await withCheckedContinuation { continuation in
            delegate.onComplete = { continuation.resume(returning: ($0, $1, $2)) }
            task.resume()
        }
        if let failure = delegate.bodyError() {
            throw BlobStreamError(.uploadFailed, "upload to \(url.absoluteString) aborted: the body failed: \(failure)", cause: failure)
        }
        if let error {
            throw BlobStreamError(.uploadFailed, "upload to \(url.absoluteString) failed: \(error.localizedDescription)", cause: error)
        }
        guard let http = response as? HTTPURLResponse else {
            throw BlobStreamError(.uploadFailed, "upload to \(url.absoluteString) got no HTTP answer")
        }
        guard (200..<300).contains(http.statusCode) else {
            throw BlobStreamError(.uploadFailed, "upload to \(url.absoluteString) failed: HTTP \(http.statusCode) \(HTTPURLResponse.localizedString(forStatusCode: http.statusCode))")
        }
        return Response(statusCode: http.statusCode, body: data)
    }

    /// The session's delegate: fresh body streams on demand, the answer's bytes, the end.
    /// Unchecked Sendable: every mutable field is guarded by `lock`.
    final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let body: UploadBody
        let progress: (@Sendable (UploadProgress) -> Void)?
        private let lock = NSLock()
        private var received = Data()
        private var streams: [URLSessionBodyStream] = []
        var onComplete: ((Data, URLResponse?, (any Error)?) -> Void)?

        init(body: UploadBody, progress: (@Sendable (UploadProgress) -> Void)?) {
            self.body = body
            self.progress = progress
        }

        func makeStream() throws -> URLSessionBodyStream {
            let stream = try URLSessionBodyStream(body: body, progress: progress)
            lock.withLock { streams.append(stream) }
            return stream
        }

        /// The error of the last body stream, if it failed.
        func bodyError() -> (any Error)? {
            lock.withLock { streams.last?.streamError }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping (InputStream?) -> Void) {
            completionHandler(try? makeStream())
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            lock.withLock { received.append(data) }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let (data, done) = lock.withLock { () -> (Data, ((Data, URLResponse?, (any Error)?) -> Void)?) in
                let done = onComplete
                onComplete = nil
                return (received, done)
            }
            done?(data, task.response, error)
        }
    }
}
