import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore

extension HTTPHedging {
    /// Sends a small request beside a read (the `HEAD` that asks a store for an object's
    /// checksum) hedged as a source's first GET is: when no answer has come after the delay
    /// (what this process measured of the origin, `firstDelay` before it measured anything),
    /// the same request goes again, and again after as long, up to `maxHedges` times; the
    /// first answer (any status below 500) is the result and the other requests are
    /// cancelled. When every request fails, the first failure. Idempotent requests only.
    ///
    /// ```swift
    /// let answer = HTTPHedging.standard.execute(head, with: client, deadline: .now() + .seconds(30))
    /// ```
    ///
    /// A node of a store that hangs holds a request for the proxy's node timeout; a read
    /// that waits for such an answer (a check at its end) waits that long unless the request
    /// is hedged.
    public func execute(
        _ request: HTTPClient.Request, with client: HTTPClient, deadline: NIODeadline? = nil
    ) -> EventLoopFuture<HTTPClient.Response> {
        let loop = client.eventLoopGroup.next()
        let promise = loop.makePromise(of: HTTPClient.Response.self)
        let race = HedgedRace(promise: promise)
        let timings = OriginTimings.of(request.url)
        let delay = timings.delay(self, connect: nil)
        let (hedging, started) = (self, NIODeadline.now())
        @Sendable func send() {
            let asked = NIODeadline.now()
            let task = client.execute(
                request: request, delegate: ResponseAccumulator(request: request), eventLoop: .delegate(on: loop),
                deadline: deadline)
            guard race.add(task) else { return task.cancel() }
            task.futureResult.whenComplete { result in
                if case .success = result { timings.noteHead(after: .now() - asked) }
                race.finished(result, by: task)
            }
        }
        @Sendable func hedge(_ sent: Int) {
            guard sent < hedging.maxHedges, !race.isSettled,
                deadline.map({ NIODeadline.now() + delay < $0 }) ?? true
            else { return }
            send()
            loop.scheduleTask(in: delay) { hedge(sent + 1) }
        }
        send()
        if maxHedges > 0 { loop.scheduleTask(deadline: started + delay) { hedge(0) } }
        return promise.futureResult
    }
}

/// The requests of one hedged `execute`: the first answer below 500 settles it, and the
/// others are cancelled.
private final class HedgedRace: Sendable {
    /// What the race holds while it runs.
    private struct Running {
        var tasks: [HTTPClient.Task<HTTPClient.Response>] = []
        var settled = false
        var firstFailure: Result<HTTPClient.Response, any Error>?
    }

    private let state = Locked(Running())
    private let promise: EventLoopPromise<HTTPClient.Response>

    init(promise: EventLoopPromise<HTTPClient.Response>) {
        self.promise = promise
    }

    var isSettled: Bool { state.withLock { $0.settled } }

    /// Counts a request sent; false when the race is already settled (the caller cancels it).
    func add(_ task: HTTPClient.Task<HTTPClient.Response>) -> Bool {
        state.withLock {
            guard !$0.settled else { return false }
            $0.tasks.append(task)
            return true
        }
    }

    /// `task` ended with `result`: the answer when it is one below 500 (the others are
    /// cancelled), the first failure once every request failed.
    func finished(_ result: Result<HTTPClient.Response, any Error>, by task: HTTPClient.Task<HTTPClient.Response>) {
        let (outcome, losers) = state.withLock {
            race -> (Result<HTTPClient.Response, any Error>?, [HTTPClient.Task<HTTPClient.Response>]) in
            guard !race.settled else { return (nil, []) }
            race.tasks.removeAll { $0 === task }
            if case .success(let response) = result, response.status.code < 500 {
                race.settled = true
                defer { race.tasks = [] }
                return (result, race.tasks)
            }
            if race.firstFailure == nil { race.firstFailure = result }
            guard race.tasks.isEmpty else { return (nil, []) }
            race.settled = true
            return (race.firstFailure, [])
        }
        for loser in losers { loser.cancel() }
        if let outcome { promise.completeWith(outcome) }
    }
}
