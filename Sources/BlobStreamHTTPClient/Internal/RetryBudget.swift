import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore
import NIOSSL

/// Why a failed request may be sent again.
package enum RetryReason: Equatable, Sendable {
    /// A cut or refused connection, a connect timeout, a 5xx (or 408, 429).
    case failure
    /// A stall (the idle timeout, or a body below the minimum rate): tried again at most
    /// `HTTPRetryPolicy.idleTimeoutRetries` times.
    case idleTimeout
}

/// The retries one source (or one upload: `BlobStreamS3`) has left under its
/// `HTTPRetryPolicy`: the waits it may still spend (all requests together) and the retries
/// after an idle timeout. Shared by the reading thread and the event loops that retry the
/// first GET, or by an upload's parts in flight.
package final class RetryBudget: Sendable {
    package let policy: HTTPRetryPolicy
    /// True: waits that overlap in time (requests in flight together, each waiting to be
    /// tried again) are charged once, so that `maxWaiting` bounds how long the work waits
    /// on a store that is down however many requests are in flight; false: every wait is
    /// charged whole (a source's ranges).
    private let chargesOverlapOnce: Bool
    private let spent = Locked<(waited: Duration, idleRetries: Int, waitingUntil: ContinuousClock.Instant?)>(
        (.zero, 0, nil))

    /// A budget for `policy`; `chargesOverlapOnce` as described there.
    package init(policy: HTTPRetryPolicy, chargesOverlapOnce: Bool = false) {
        self.policy = policy
        self.chargesOverlapOnce = chargesOverlapOnce
    }

    /// The statuses tried again: a request timeout, too many requests, server errors.
    static let retriedStatuses: Set<UInt> = [408, 429, 500, 502, 503, 504]

    /// Why `raw` (judged as `judged`) may be tried again; nil when it may not.
    static func reason(_ raw: Result<RangeAnswer, RangeFetch.RangeFailure>, judged: BlobStreamError?) -> RetryReason? {
        switch raw {
        case .success(let answer):
            if retriedStatuses.contains(answer.head.status.code) { return .failure }
            // A 206 whose body is shorter than the range (the connection closed cleanly).
            return judged?.code == .truncated ? .failure : nil
        case .failure(.transport(let error, let status, _)):
            if error is RangeStalled { return .idleTimeout }
            if error is RangeBodyTooLong || error is NIOSSLError { return nil }
            if let status, !(200..<300).contains(status) {
                return retriedStatuses.contains(UInt(status)) ? .failure : nil
            }
            if let error = error as? HTTPClientError {
                if error == .readTimeout { return .idleTimeout }
                if error == .alreadyShutdown || error == .cancelled || error == .deadlineExceeded { return nil }
            }
            let text = String(reflecting: error)
            if text.contains("SSL") || text.contains("TLS") || text.contains("certificate") { return nil }
            return .failure
        case .failure(.cancelled), .failure(.notSent):
            return nil
        }
    }

    /// The wait before attempt `attempt + 1` of a request whose attempt `attempt` failed for
    /// `reason`, charged to the budget; nil when no attempt is left (too many for this
    /// request, no waiting time left, or the idle-timeout retries used up).
    package func wait(after attempt: Int, reason: RetryReason) -> Duration? {
        guard attempt < policy.maxAttempts else { return nil }
        let jittered = policy.nominalDelay(after: attempt) * Double.random(in: 0.5...1)
        let now = ContinuousClock.now
        return spent.withLock { spent in
            if reason == .idleTimeout, spent.idleRetries >= policy.idleTimeoutRetries { return nil }
            let left = policy.maxWaiting - spent.waited
            // The part of the wait no other wait covers already.
            let covered =
                chargesOverlapOnce ? min(max((spent.waitingUntil ?? now) - now, .zero), jittered) : .zero
            let charged = jittered - covered
            guard left > .zero || charged == .zero else { return nil }
            let wait = covered + min(charged, left)
            spent.waited += wait - covered
            if chargesOverlapOnce { spent.waitingUntil = max(spent.waitingUntil ?? now, now + wait) }
            if reason == .idleTimeout { spent.idleRetries += 1 }
            return wait
        }
    }

    /// The time waited so far (overlapping waits once, when so charged).
    package var waited: Duration { spent.withLock { $0.waited } }

    /// `error`, the last of `attempts` attempts of the GET at `offset`, with the offset and
    /// the attempts in its message (the code and the cause kept).
    func gaveUp(_ error: BlobStreamError, at offset: Int64, attempts: Int) -> BlobStreamError {
        guard attempts > 1 else { return error }
        let seconds = Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
        return BlobStreamError(
            error.code,
            error.message
                + String(
                    format: " (reading from offset %lld: %d attempts, %.1f s of waiting between them)", offset,
                    attempts, seconds), cause: error.cause)
    }
}
