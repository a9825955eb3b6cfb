import AsyncHTTPClient
import BlobStream
import BlobStreamUpload
import Foundation
import NIOCore
import NIOHTTP1

/// Receives the answer on the event loop, where the body's writes are reported too: a 2xx
/// head that arrives before the last body byte was written is recorded as an early answer,
/// with the bytes written by then.
final class AnswerDelegate: HTTPClientResponseDelegate, Sendable {
    struct Answer: Sendable {
        var head: HTTPResponseHead
        var body: Data
    }

    private struct State {
        var written: Int64 = 0
        var requestSent = false
        var head: HTTPResponseHead?
        var body = Data()
        var earlyAnswer: (status: Int, sent: Int64)?
        var otherMethod: HTTPRequestHead?
    }

    private let method: HTTPMethod
    private let total: Int64?
    private let activity: UploadActivity
    private let pumps: BodyPumps?
    private let state = Locked(State())

    /// - Parameter pumps: credited with the body bytes written, when a pump sends the body.
    init(method: HTTPMethod, total: Int64?, activity: UploadActivity, pumps: BodyPumps? = nil) {
        self.method = method
        self.total = total
        self.activity = activity
        self.pumps = pumps
    }

    /// A 2xx head that came before the last body byte was written, and the bytes by then.
    var earlyAnswer: (status: Int, sent: Int64)? { state.withLock { s in s.earlyAnswer } }
    /// The answer's head with a status of 300 or more, when one came before the client
    /// ended the request (AsyncHTTPClient then cancels the body and fails the task with
    /// `requestStreamCancelled`, though the server said what it wants: a redirect, a 413).
    var refusalBeforeEnd: Answer? {
        state.withLock { s in s.head.flatMap { $0.status.code >= 300 ? Answer(head: $0, body: s.body) : nil } }
    }
    /// A request the client sent with a method other than the upload's (a redirect it
    /// followed with GET).
    var otherMethod: HTTPRequestHead? { state.withLock { s in s.otherMethod } }

    func didSendRequestHead(task: HTTPClient.Task<Answer>, _ head: HTTPRequestHead) {
        state.withLock { s in
            s.written = 0
            s.requestSent = false
            if head.method != method, s.otherMethod == nil { s.otherMethod = head }
        }
    }

    func didSendRequestPart(task: HTTPClient.Task<Answer>, _ part: IOData) {
        state.withLock { s in s.written += Int64(part.readableBytes) }
        activity.touch()
        pumps?.acknowledge(part.readableBytes)
    }

    func didSendRequest(task: HTTPClient.Task<Answer>) {
        state.withLock { s in s.requestSent = true }
    }

    func didReceiveHead(task: HTTPClient.Task<Answer>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        activity.touch()
        state.withLock { s in
            s.head = head
            s.body = Data()
            // With a known length the last byte written completes the body; a chunked body
            // needs its terminating chunk, which comes with `didSendRequest`.
            let complete = s.requestSent || (total != nil && s.written >= total!)
            if (200..<300).contains(Int(head.status.code)), !complete, s.earlyAnswer == nil {
                s.earlyAnswer = (Int(head.status.code), s.written)
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Answer>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        activity.touch()
        state.withLock { s in
            if s.body.count < 1 << 20 {
                s.body.append(contentsOf: buffer.readableBytesView.prefix((1 << 20) - s.body.count))
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Answer>) throws -> Answer {
        try state.withLock { s in
            guard let head = s.head else { throw HTTPClientError.remoteConnectionClosed }
            return Answer(head: head, body: s.body)
        }
    }
}
