import AsyncHTTPClient
import BlobStreamUpload
import Foundation
import NIOCore
import NIOHTTP1

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
    private let pumps: BodyPumps?
    private let lock = NSLock()
    private var written: Int64 = 0
    private var requestSent = false
    private var head: HTTPResponseHead?
    private var body = Data()
    private var _earlyAnswer: (status: Int, sent: Int64)?
    private var _otherMethod: HTTPRequestHead?

    /// - Parameter pumps: credited with the body bytes written, when a pump sends the body.
    init(method: HTTPMethod, total: Int64?, activity: UploadActivity, pumps: BodyPumps? = nil) {
        self.method = method
        self.total = total
        self.activity = activity
        self.pumps = pumps
    }

    /// A 2xx head that came before the last body byte was written, and the bytes by then.
    var earlyAnswer: (status: Int, sent: Int64)? { lock.withLock { _earlyAnswer } }
    /// The answer's head with a status of 300 or more, when one came before the client
    /// ended the request (AsyncHTTPClient then cancels the body and fails the task with
    /// `requestStreamCancelled`, though the server said what it wants: a redirect, a 413).
    var refusalBeforeEnd: Answer? {
        lock.withLock { head.flatMap { $0.status.code >= 300 ? Answer(head: $0, body: body) : nil } }
    }
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
        pumps?.acknowledge(part.readableBytes)
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
