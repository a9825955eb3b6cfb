import BlobStream
import Foundation

/// What an upload's watchdog and its checks need to know about the transfer in flight:
/// when a byte last moved, whether the connection is up, and how much of the current
/// attempt's body was handed to the client (a redirect starts a new attempt).
package final class UploadActivity: Sendable {
    private struct State {
        var start: ContinuousClock.Instant
        var last: ContinuousClock.Instant
        var connected = false
        var sent: Int64 = 0
        var total: Int64?
        var finished = false
    }

    private let clock = ContinuousClock()
    private let state: Locked<State>

    package init() {
        let start = clock.now
        state = Locked(State(start: start, last: start))
    }

    /// A new attempt (the first, or one after a redirect): connecting again, nothing sent.
    package func beginAttempt() {
        state.withLock { s in
            s.start = clock.now
            s.last = s.start
            s.connected = false
            s.sent = 0
            s.finished = false
        }
    }

    /// A new body (the client asked for the body from its start): nothing of it sent.
    package func beginBody(total: Int64?) {
        state.withLock { s in
            s.sent = 0
            s.total = total
            s.finished = false
            s.last = clock.now
        }
    }

    /// Body bytes handed to the client: `sent` so far in this body; `finished` at its end.
    package func body(sent: Int64, finished: Bool) {
        state.withLock { s in
            s.sent = sent
            s.finished = s.finished || finished
            s.connected = true
            s.last = clock.now
        }
    }

    /// A byte of the answer arrived (or the connection otherwise moved).
    package func touch() {
        state.withLock { s in
            s.connected = true
            s.last = clock.now
        }
    }

    /// The body so far: bytes handed to the client, its length when known, and whether
    /// all of it was handed over.
    package var bodyState: (sent: Int64, total: Int64?, complete: Bool) {
        state.withLock { s in
            (s.sent, s.total, s.finished || (s.total != nil && s.sent == s.total))
        }
    }

    /// Waits until a limit passes and throws its `.timedOut` error naming `url`; ends only
    /// by throwing (`CancellationError` when cancelled).
    package func watch<T>(url: String, options: UploadOptions) async throws -> T {
        while true {
            let (deadline, message) = state.withLock { s -> (ContinuousClock.Instant, String) in
                if s.connected {
                    let length = s.total.map { " of \($0)" } ?? ""
                    return (
                        s.last + options.idleTimeout,
                        "upload to \(url) timed out: no byte sent or received for \(options.idleTimeout.secondsText) (idle timeout; \(s.sent)\(length) bytes sent)"
                    )
                }
                return (
                    s.start + options.connectTimeout,
                    "upload to \(url) timed out: no connection within \(options.connectTimeout.secondsText) (connect timeout)"
                )
            }
            let now = clock.now
            if now >= deadline { throw BlobStreamError(.timedOut, message) }
            // Looks again at least every 50 ms: the state (and so the deadline) changes as
            // the upload connects and bytes move.
            try await Task.sleep(
                until: min(deadline, now + .milliseconds(50)), tolerance: .milliseconds(10), clock: clock)
        }
    }
}

/// Runs an upload's `work` under its limits: the watchdog of `activity` ends it with a
/// `.timedOut` error when a limit passes; cancelling the calling task ends it with
/// `CancellationError`, whatever error the cancelled client reported.
package func withUploadLimits<T: Sendable>(
    url: String, options: UploadOptions, activity: UploadActivity, _ work: @escaping @Sendable () async throws -> T
) async throws -> T {
    do {
        return try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask(operation: work)
            group.addTask { try await activity.watch(url: url, options: options) }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    } catch {
        if Task.isCancelled { throw CancellationError() }
        throw error
    }
}
