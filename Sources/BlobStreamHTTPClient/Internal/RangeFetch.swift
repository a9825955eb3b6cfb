import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore
import NIOHTTP1

/// What one ranged GET brought back: the answer's head and the body bytes received (at
/// most the bytes asked for, plus one to tell a longer body), or how it failed.
struct RangeAnswer: Sendable {
    var head: HTTPResponseHead
    var body: PinnedBytes
}

/// One ranged GET in flight, waited for by the reading thread. The answer arrives on an
/// event loop; `wait()` blocks on a condition until it does, or until `cancel()` (from any
/// thread). Unchecked Sendable: every mutable property is guarded by `condition`.
final class RangeFetch: @unchecked Sendable {
    /// The bytes asked for.
    let range: ClosedRange<Int64>
    private let condition = NSCondition()
    private var outcome: Result<RangeAnswer, RangeFailure>?
    private var task: HTTPClient.Task<RangeAnswer>?
    private var onDone: (@Sendable (Result<RangeAnswer, RangeFailure>) -> Void)?
    /// Woken when the outcome is in (a reader racing this GET against a hedge).
    private var observers: [FetchSignal] = []
    /// When the GET was sent, when a byte of its answer last came, when it ended.
    let clock = FetchClock()

    /// How a GET failed before an answer was judged.
    enum RangeFailure: Error, Sendable {
        /// The client failed (connect, TLS, idle timeout, a connection closed); `received`
        /// body bytes had arrived after a head with `status` (nil: no head).
        case transport(any Error, status: Int?, received: Int)
        /// `cancel()` was called (close or interrupt).
        case cancelled
        /// The request could not be made (its `prepare` hook failed, a bad URL).
        case notSent(BlobStreamError)
    }

    /// The hedges of this GET: GETs of the same bytes sent while it stayed silent, which the
    /// reader races against it (`BlockPipeline.hedgedAnswer`); cancelled with it.
    private var hedges: [RangeFetch] = []
    private var cancelled = false

    init(range: ClosedRange<Int64>) {
        self.range = range
    }

    /// Adds `hedge` to this GET's hedges, unless it has `limit` of them already or was
    /// cancelled (false: the caller sends nothing).
    func attach(_ hedge: RangeFetch, limit: Int) -> Bool {
        condition.withLock {
            guard !cancelled, hedges.count < limit else { return false }
            hedges.append(hedge)
            return true
        }
    }

    /// This GET's hedges, in the order they were sent.
    var attachedHedges: [RangeFetch] { condition.withLock { hedges } }

    /// Sends `request` with `client`, answered on `loop` when one is given, on a kept-alive
    /// connection of the pool (new connections are made on `loop`); `onDone` (optional) runs
    /// once on the event loop when the answer is complete or failed, before waiters wake.
    ///
    /// With `minimumRate`, a body slower than it ends the request, which fails with
    /// `RangeStalled` (see `RateWatch`). The time to the answer's head is noted in `origin`.
    ///
    /// `loop` is a preference, not a requirement (`.delegate(on:)`): AsyncHTTPClient closes a
    /// connection made for a request that requires its loop (`.delegateAndChannel(on:)`) as
    /// soon as it is idle, so each block's GET would open a connection of its own (86 for a
    /// GiB, each a TLS handshake on a real store).
    func start(
        _ request: HTTPClient.Request, client: HTTPClient, deadline: NIODeadline?, memory: BlockMemory? = nil,
        on loop: (any EventLoop)? = nil, minimumRate: HTTPMinimumRate? = nil, origin: OriginTimings? = nil,
        onDone: (@Sendable (Result<RangeAnswer, RangeFailure>) -> Void)? = nil
    ) {
        let watch = minimumRate.map { RateWatch(rate: $0) }
        // The clock and the rate's window start when the request's head is written
        // (`RangeDelegate.didSendRequestHead`): a GET that waits for a connection of the pool
        // is neither silent (hedged) nor slow (ended for its rate).
        let delegate = RangeDelegate(
            limit: Int(range.upperBound - range.lowerBound + 2), memory: memory, watch: watch, clock: clock)
        condition.lock()
        self.onDone = onDone
        let cancelled = outcome != nil
        condition.unlock()
        if cancelled { return }
        let preference: HTTPClient.EventLoopPreference = loop.map { .delegate(on: $0) } ?? .indifferent
        clock.asked(reportingTo: origin)
        let task = client.execute(request: request, delegate: delegate, eventLoop: preference, deadline: deadline)
        condition.withLock { self.task = task }
        task.futureResult.whenComplete { [self] result in
            watch?.stop()
            finish(
                result.mapError {
                    .transport(watch?.stall ?? $0, status: delegate.status, received: delegate.received)
                })
        }
        if condition.withLock({ outcome != nil }) { task.cancel() }
    }

    /// Runs `onDone` first, then wakes the waiters: a waiter finds what `onDone` recorded.
    private func finish(_ result: Result<RangeAnswer, RangeFailure>) {
        let callback: (@Sendable (Result<RangeAnswer, RangeFailure>) -> Void)? = condition.withLock {
            guard outcome == nil else { return nil }
            let callback = onDone
            onDone = nil
            return callback
        }
        callback?(result)
        clock.ended()
        let waking = condition.withLock { () -> [FetchSignal] in
            if outcome == nil { outcome = result }
            condition.broadcast()
            defer { observers = [] }
            return observers
        }
        for signal in waking { signal.fire() }
    }

    /// Fires `signal` once the outcome is in (at once when it is).
    func observe(_ signal: FetchSignal) {
        let done = condition.withLock { () -> Bool in
            if outcome == nil { observers.append(signal) }
            return outcome != nil
        }
        if done { signal.fire() }
    }

    /// Ends the fetch before it was sent, with `error`.
    func fail(_ error: BlobStreamError) {
        let waking = condition.withLock { () -> [FetchSignal] in
            if outcome == nil { outcome = .failure(.notSent(error)) }
            onDone = nil
            condition.broadcast()
            defer { observers = [] }
            return observers
        }
        for signal in waking { signal.fire() }
    }

    /// Ends the request (if it still runs), and its hedges' (`attach`), and wakes `wait()`
    /// with `.cancelled`.
    func cancel() {
        let (task, waking, hedges) = condition.withLock {
            () -> (HTTPClient.Task<RangeAnswer>?, [FetchSignal], [RangeFetch]) in
            if outcome == nil { outcome = .failure(.cancelled) }
            onDone = nil
            cancelled = true
            condition.broadcast()
            defer { observers = [] }
            return (self.task, observers, self.hedges)
        }
        for signal in waking { signal.fire() }
        task?.cancel()
        for hedge in hedges { hedge.cancel() }
    }

    /// True once the answer (or the failure) is in.
    var isDone: Bool { condition.withLock { outcome != nil } }

    /// Blocks until the answer is in (or the fetch is cancelled).
    func wait() -> Result<RangeAnswer, RangeFailure> {
        condition.lock()
        defer { condition.unlock() }
        while outcome == nil { condition.wait() }
        return outcome!
    }
}

/// The answer's body was longer than the bytes asked for (a server that ignored `Range`).
struct RangeBodyTooLong: Error {}

/// Collects one answer on the event loop: its head, and its body up to `limit` bytes (more
/// fails the request: a server that ignores `Range` and sends a large object is not read to
/// its end).
private final class RangeDelegate: HTTPClientResponseDelegate, Sendable {
    typealias Response = RangeAnswer

    private struct State {
        var head: HTTPResponseHead?
        let body: PinnedBytes
    }

    private let limit: Int
    private let state: Locked<State>
    private let watch: RateWatch?
    private let clock: FetchClock

    init(limit: Int, memory: BlockMemory?, watch: RateWatch?, clock: FetchClock) {
        self.limit = limit
        self.watch = watch
        self.clock = clock
        state = Locked(State(body: PinnedBytes(capacity: limit, from: memory)))
    }

    var status: Int? { state.withLock { s in s.head.map { Int($0.status.code) } } }
    var received: Int { state.withLock { s in s.body.count } }

    func didSendRequestHead(task: HTTPClient.Task<RangeAnswer>, _ head: HTTPRequestHead) {
        clock.sent()
        // A stall ends the request: it fails with the stall, not with the cancellation.
        watch?.start(on: task.eventLoop) { _ in task.cancel() }
    }

    func didReceiveHead(task: HTTPClient.Task<RangeAnswer>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        state.withLock { s in
            s.head = head
        }
        clock.heard()
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<RangeAnswer>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        watch?.add(buffer.readableBytes)
        clock.heard()
        let tooLong: Bool = state.withLock { s in
            let taken = buffer.withUnsafeReadableBytes { s.body.append($0) }
            return buffer.readableBytes > taken
        }
        // Stop reading a body longer than asked for (a 200 with a whole large object): the
        // bytes kept are enough to judge the answer.
        return tooLong ? task.eventLoop.makeFailedFuture(RangeBodyTooLong()) : task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<RangeAnswer>) throws -> RangeAnswer {
        try state.withLock { s in
            guard let head = s.head else { throw HTTPClientError.remoteConnectionClosed }
            return RangeAnswer(head: head, body: s.body)
        }
    }
}

/// When a GET was asked of the client, when it was sent, when the server was last heard from
/// (its head, a body part), when the GET ended, and the longest it went silent in between;
/// the time to its first answer goes to its origin's timings (`OriginTimings`).
final class FetchClock: Sendable {
    private struct State {
        var askedAt: NIODeadline?
        var sentAt: NIODeadline?
        var heardAt: NIODeadline?
        var headAt: NIODeadline?
        var endedAt: NIODeadline?
        var longestGap: TimeAmount = .zero
        var origin: OriginTimings?
    }

    private let state = Locked(State())

    /// The GET is handed to the client (it may wait for a connection before it is sent);
    /// the time to its answer's head is noted in `origin`.
    func asked(reportingTo origin: OriginTimings?) {
        state.withLock { s in
            s.askedAt = .now()
            s.origin = origin
        }
    }
    func sent() { state.withLock { s in s.sentAt = .now() } }
    func heard() {
        let now = NIODeadline.now()
        let first = state.withLock { s -> (OriginTimings, TimeAmount)? in
            defer { s.heardAt = now }
            if let last = s.heardAt ?? s.sentAt { s.longestGap = max(s.longestGap, now - last) }
            guard s.heardAt == nil, let sentAt = s.sentAt else { return nil }
            s.headAt = now
            return s.origin.map { ($0, now - sentAt) }
        }
        if let (origin, elapsed) = first { origin.noteHead(after: elapsed) }
    }

    /// When the GET was sent; nil before.
    var sentTime: NIODeadline? { state.withLock { s in s.sentAt } }

    /// How long the answer's head took to come after the GET was sent; nil before it came.
    var timeToHead: TimeAmount? {
        state.withLock { s in
            guard let sentAt = s.sentAt, let headAt = s.headAt else { return nil }
            return headAt - sentAt
        }
    }

    /// How long the GET waited, once asked, before it was sent: the connection's setup (TCP,
    /// TLS) for a GET on a new connection, or a wait for one of the pool's; nil before it was
    /// sent.
    var connectWait: TimeAmount? {
        state.withLock { s in
            guard let askedAt = s.askedAt, let sentAt = s.sentAt else { return nil }
            return sentAt - askedAt
        }
    }
    func ended() {
        let now = NIODeadline.now()
        state.withLock { s in
            if let last = s.heardAt ?? s.sentAt { s.longestGap = max(s.longestGap, now - last) }
            s.endedAt = now
        }
    }

    /// How long the server has said nothing (since it was sent, or last heard from); nil
    /// before it was sent and once it ended.
    var silence: TimeAmount? {
        state.withLock { s in
            guard let sentAt = s.sentAt, s.endedAt == nil else { return nil }
            return .now() - (s.heardAt ?? sentAt)
        }
    }

    /// The longest the server said nothing between the GET being sent and its end (the time to
    /// its head, or a pause in its body); nil before it ended.
    var longestSilence: TimeAmount? {
        state.withLock { s in
            guard s.sentAt != nil, s.endedAt != nil else { return nil }
            return s.longestGap
        }
    }
}

/// Wakes a reader that waits for the first of several GETs. Unchecked Sendable: guarded by
/// `condition`.
final class FetchSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var fired = false

    func fire() {
        condition.withLock {
            fired = true
            condition.broadcast()
        }
    }

    /// Waits until fired or `deadline`; true when fired (and makes it unfired again).
    func wait(until deadline: Date) -> Bool {
        condition.withLock {
            while !fired { if !condition.wait(until: deadline) { break } }
            defer { fired = false }
            return fired
        }
    }
}
