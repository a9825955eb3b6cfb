import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore
import NIOHTTP1

/// The first GET of `HTTPRangeDataSource` (`Range: bytes=OFFSET-`, to the object's end),
/// read as a stream: a 206 answer is announced at its head and its body is taken by the
/// reading thread as it arrives, at most `limit` bytes held (then the server is made to
/// wait: memory stays bounded whatever the object's size). Any other answer (a 200 with
/// the whole object, a 416, an error status) is collected whole, up to `wholeLimit` bytes
/// (a longer one fails with `RangeBodyTooLong`), and announced at its end.
///
/// Unchecked Sendable: every mutable property is guarded by `condition`.
final class RangeStream: @unchecked Sendable {
    /// The offset of the first byte asked for.
    let offset: Int64
    private var limit: Int
    private let wholeLimit: Int
    /// The body bytes the reader will take at most (`takeOnly(_:)`): past them, the server
    /// is left waiting until the request ends.
    private var wanted = Int.max
    private let condition = NSCondition()
    private var head: HTTPResponseHead?
    private var streaming = false
    private var chunks = CircularBuffer<ByteBuffer>()
    private var buffered = 0
    private var whole: [UInt8] = []
    private var received = 0
    private var ended = false
    private var failure: RangeFetch.RangeFailure?
    private var demand: EventLoopPromise<Void>?
    private var task: HTTPClient.Task<Void>?
    private var onOpen: (@Sendable (Result<RangeAnswer, RangeFetch.RangeFailure>) -> Void)?
    /// Watches the body's rate once the reader takes it (`watch(_:)`).
    private var rateWatch: RateWatch?
    /// When the request was sent, last heard from, ended (a hedge is sent while it is silent).
    let clock = FetchClock()

    /// What a read of the body found.
    enum Taken {
        /// That many bytes were copied (or dropped).
        case bytes(Int)
        /// The answer ended, after `received` body bytes.
        case end(received: Int)
        /// The answer failed (or the stream was cancelled).
        case failed(RangeFetch.RangeFailure)
    }

    /// - Parameters:
    ///   - limit: the body bytes held before the server is made to wait.
    ///   - wholeLimit: the most bytes of an answer other than 206 that are collected.
    init(offset: Int64, limit: Int, wholeLimit: Int) {
        self.offset = offset
        self.limit = max(limit, 1)
        self.wholeLimit = wholeLimit
    }

    /// Sends `request`; `onOpen` runs once on the event loop: at the head of a 206 answer
    /// (with an empty body), or when any other answer is complete or failed. The time to
    /// the answer's head is noted in `origin`.
    func start(
        _ request: HTTPClient.Request, client: HTTPClient, origin: OriginTimings? = nil,
        onOpen: @escaping @Sendable (Result<RangeAnswer, RangeFetch.RangeFailure>) -> Void
    ) {
        let cancelled = condition.withLock { () -> Bool in
            self.onOpen = onOpen
            return failure != nil
        }
        if cancelled { return }
        // `clock.sent()` runs when the request's head is written (`StreamDelegate`): a GET
        // that waits for a connection of the pool is not silent, and is never hedged.
        clock.asked(reportingTo: origin)
        let task = client.execute(request: request, delegate: StreamDelegate(stream: self), deadline: nil)
        condition.withLock { self.task = task }
        task.futureResult.whenComplete { [self] result in
            switch result {
            case .success: finished(nil)
            case .failure(let error): finished(error)
            }
        }
        if condition.withLock({ failure != nil }) { task.cancel() }
    }

    // MARK: - The event loop's side

    fileprivate func receivedHead(_ head: HTTPResponseHead) {
        clock.heard()
        let announce = condition.withLock { () -> (@Sendable (Result<RangeAnswer, RangeFetch.RangeFailure>) -> Void)? in
            self.head = head
            guard head.status.code == 206 else {
                if head.status.code == 200 { whole.reserveCapacity(min(wholeLimit, 16 << 20)) }
                return nil
            }
            streaming = true
            defer { onOpen = nil }
            return onOpen
        }
        announce?(.success(RangeAnswer(head: head, body: PinnedBytes(capacity: 0))))
    }

    /// Keeps `buffer`; a future that completes once the reader has taken enough of what is
    /// held (the server waits until then), or a failure for a whole answer that is too long.
    fileprivate func receivedBody(_ buffer: ByteBuffer, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        condition.lock()
        defer { condition.unlock() }
        received += buffer.readableBytes
        rateWatch?.add(buffer.readableBytes)
        clock.heard()
        guard streaming else {
            let room = wholeLimit - whole.count
            whole.append(contentsOf: buffer.readableBytesView.prefix(room))
            return buffer.readableBytes > room
                ? eventLoop.makeFailedFuture(RangeBodyTooLong()) : eventLoop.makeSucceededVoidFuture()
        }
        guard failure == nil, buffer.readableBytes > 0 else { return eventLoop.makeSucceededVoidFuture() }
        // A copy the reader owns, not the event loop's buffer: SwiftNIO reuses its pooled
        // receive buffers once it finds them uniquely referenced, and the reader drops its
        // reference on another thread, an ordering ThreadSanitizer cannot see through the
        // uninstrumented reference count (a report in make tsan). One memcpy per chunk.
        chunks.append(ByteBuffer(bytes: buffer.readableBytesView))
        buffered += buffer.readableBytes
        condition.broadcast()
        guard buffered >= limit || received >= wanted else { return eventLoop.makeSucceededVoidFuture() }
        let promise = eventLoop.makePromise(of: Void.self)
        demand = promise
        rateWatch?.hold() // the server waits for the reader: not a stall
        return promise.futureResult
    }

    /// The answer ended (`error` nil) or failed.
    private func finished(_ error: (any Error)?) {
        let (announce, outcome, waiting) = condition.withLock {
            () -> (
                (@Sendable (Result<RangeAnswer, RangeFetch.RangeFailure>) -> Void)?,
                Result<RangeAnswer, RangeFetch.RangeFailure>?, EventLoopPromise<Void>?
            ) in
            if let error, failure == nil {
                failure = .transport(error, status: head.map { Int($0.status.code) }, received: received)
            }
            rateWatch?.stop()
            clock.ended()
            ended = true
            condition.broadcast()
            let callback = onOpen
            onOpen = nil
            defer { demand = nil }
            if let failure { return (callback, .failure(failure), demand) }
            guard let head else {
                return (
                    callback, .failure(.transport(HTTPClientError.remoteConnectionClosed, status: nil, received: 0)),
                    demand
                )
            }
            return (callback, .success(RangeAnswer(head: head, body: PinnedBytes(whole))), demand)
        }
        waiting?.succeed()
        if let announce, let outcome { announce(outcome) }
    }

    // MARK: - The reader's side

    /// Copies up to `maxLength` bytes of the body to `buffer` (drops them when `buffer` is
    /// nil), waiting for them when none are held.
    func take(_ buffer: UnsafeMutablePointer<UInt8>?, maxLength: Int) -> Taken {
        condition.lock()
        while buffered == 0, failure == nil, !ended { condition.wait() }
        if buffered == 0 {
            defer { condition.unlock() }
            if let failure { return .failed(failure) }
            return .end(received: received)
        }
        var copied = 0
        while copied < maxLength, var chunk = chunks.popFirst() {
            let n = min(maxLength - copied, chunk.readableBytes)
            if let buffer, n > 0 {
                chunk.withUnsafeReadableBytes { raw in
                    (buffer + copied).update(from: raw.bindMemory(to: UInt8.self).baseAddress!, count: n)
                }
            }
            chunk.moveReaderIndex(forwardBy: n)
            if chunk.readableBytes > 0 { chunks.prepend(chunk) }
            copied += n
        }
        buffered -= copied
        let resume = buffered < limit / 2 && received < wanted ? demand : nil
        if resume != nil {
            demand = nil
            rateWatch?.release()
        }
        condition.unlock()
        resume?.succeed()
        return .bytes(copied)
    }

    /// Says that the reader takes at most the first `count` bytes of the body (then ends the
    /// request): no more are read from the connection once that many came.
    func takeOnly(_ count: Int) {
        condition.withLock { wanted = count }
    }

    /// Lets up to `bytes` of the body be held from now on (an answer read as it arrives,
    /// after a first block that was to be small).
    func raiseLimit(to bytes: Int) {
        let resume = condition.withLock { () -> EventLoopPromise<Void>? in
            limit = max(limit, bytes)
            guard buffered < limit / 2, let waiting = demand else { return nil }
            demand = nil
            rateWatch?.release()
            return waiting
        }
        resume?.succeed()
    }

    /// Ends the answer if its body comes slower than `rate` from now on (time while the
    /// server waits for the reader does not count): it then fails with `RangeStalled`.
    func watch(_ rate: HTTPMinimumRate) {
        let started = condition.withLock { () -> (RateWatch, any EventLoop)? in
            guard rateWatch == nil, failure == nil, !ended, let task else { return nil }
            let watch = RateWatch(rate: rate)
            rateWatch = watch
            if demand != nil { watch.hold() }
            return (watch, task.eventLoop)
        }
        guard let (watch, loop) = started else { return }
        watch.start(on: loop) { [weak self] stall in self?.stalled(stall) }
    }

    /// The body came too slowly: the answer fails with `stall` and the request ends.
    private func stalled(_ stall: RangeStalled) {
        end(when: {
            guard failure == nil, !ended else { return false }
            failure = .transport(stall, status: head.map { Int($0.status.code) }, received: received)
            return true
        })
    }

    /// True when a `take` would return at once (bytes are held, or the answer is over).
    var isReady: Bool { condition.withLock { buffered > 0 || failure != nil || ended } }

    /// Ends the request (if it still runs); a waiting `take` returns `.cancelled`.
    func cancel() {
        end(when: {
            if failure == nil, !ended { failure = .cancelled }
            rateWatch?.stop()
            clock.ended()
            onOpen = nil
            return true
        })
    }

    /// Ends the answer when `decide` (run under the lock) says so: the bytes held are
    /// dropped, a waiting `take` wakes to the failure set, the body's demand is released and
    /// the request cancelled.
    private func end(when decide: () -> Bool) {
        let (task, waiting) = condition.withLock { () -> (HTTPClient.Task<Void>?, EventLoopPromise<Void>?) in
            guard decide() else { return (nil, nil) }
            chunks.removeAll()
            buffered = 0
            condition.broadcast()
            defer { demand = nil }
            return (self.task, demand)
        }
        waiting?.succeed()
        task?.cancel()
    }
}

/// Hands an answer's parts to its `RangeStream` (on the event loop).
private final class StreamDelegate: HTTPClientResponseDelegate, Sendable {
    typealias Response = Void
    let stream: RangeStream

    init(stream: RangeStream) {
        self.stream = stream
    }

    func didSendRequestHead(task: HTTPClient.Task<Void>, _ head: HTTPRequestHead) {
        stream.clock.sent()
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        stream.receivedHead(head)
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        stream.receivedBody(buffer, on: task.eventLoop)
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {}
}
