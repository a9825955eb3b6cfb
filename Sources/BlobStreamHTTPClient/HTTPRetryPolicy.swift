import Foundation

/// How `HTTPRangeDataSource` tries a failed GET again: at the same offset, after a jittered
/// exponential backoff, pinned to the object's strong ETag by `If-Match`, within a bound on
/// attempts and on the time spent waiting.
///
/// ```swift
/// var options = HTTPRangeOptions()
/// options.retry = HTTPRetryPolicy(maxAttempts: 8, maxWaiting: .seconds(60))
/// let source = HTTPRangeDataSource(url: url, options: options)
/// ```
///
/// What is tried again: a cut connection (a body shorter than its `Content-Length`), a
/// refused or reset connection, a connect timeout, an answer 408, 429, 500, 502, 503 or 504,
/// and (at most `idleTimeoutRetries` times per source) a stall: an idle timeout, or a body
/// slower than `HTTPRangeOptions.minimumRate`. Never: other 4xx
/// (404, 403, 412: the object changed), TLS failures, a server that ignores `Range`, a
/// close or an interrupt.
///
/// What makes a retry safe: a range GET after the first carries `If-Match: <strong ETag>`
/// and its answer is checked against the object's ETag and length, so that bytes of two
/// versions are never spliced. A range is taken whole or not at all: the bytes of a failed
/// attempt are dropped, never handed out. Without a strong ETag the object is read in one
/// pass and nothing is asked twice: only the first GET is tried again, and only when it
/// brought none of the object's bytes (a refused connection, a 5xx, no answer at all).
///
/// The wait before attempt *n* + 1 is `initialDelay × multiplier^(n−1)`, at most
/// `maxDelay`, times a random factor between 0.5 and 1 (so that many readers of one store
/// do not come back at once). The waits of one source add up to at most `maxWaiting`:
/// a store that comes back within it is survived; one that stays down ends the read with
/// the last error, whose message names the URL, the offset and the attempts made.
///
/// S3 uploads (`S3UploadOptions.retry` of BlobStreamS3) are tried again under the same
/// policy, each request of the upload as a range is, the waits of parts in flight together
/// counted once.
public struct HTTPRetryPolicy: Sendable, Equatable {
    /// The most attempts of one request (the first included; at least 1): 5 by default.
    public var maxAttempts: Int
    /// The most time one source spends waiting between attempts, all ranges together:
    /// 30 s by default.
    public var maxWaiting: Duration
    /// How many times per source a request that stalled (ended by the idle timeout, or
    /// slower than `HTTPRangeOptions.minimumRate`) is tried again (a server that stalls is
    /// rarely helped by asking again): 1 by default.
    public var idleTimeoutRetries: Int
    /// The wait before the second attempt: 1 s by default.
    public var initialDelay: Duration
    /// What each wait is multiplied by for the next: 2 by default.
    public var multiplier: Double
    /// The longest single wait: 8 s by default.
    public var maxDelay: Duration

    /// A policy with the given bounds (by default: 5 attempts, 30 s of waiting in all, one
    /// retry after an idle timeout, waits of 1, 2, 4, 8 s, each jittered).
    public init(
        maxAttempts: Int = 5, maxWaiting: Duration = .seconds(30), idleTimeoutRetries: Int = 1,
        initialDelay: Duration = .seconds(1), multiplier: Double = 2, maxDelay: Duration = .seconds(8)
    ) {
        self.maxAttempts = max(maxAttempts, 1)
        self.maxWaiting = max(maxWaiting, .zero)
        self.idleTimeoutRetries = max(idleTimeoutRetries, 0)
        self.initialDelay = max(initialDelay, .zero)
        self.multiplier = max(multiplier, 1)
        self.maxDelay = max(maxDelay, .zero)
    }

    /// No retry: every request is sent once.
    public static let none = HTTPRetryPolicy(maxAttempts: 1, maxWaiting: .zero, idleTimeoutRetries: 0)

    /// The wait before attempt `attempt + 1`, before jitter.
    func nominalDelay(after attempt: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(attempt, 1) {
            delay = delay * multiplier
            if delay >= maxDelay { return maxDelay }
        }
        return min(delay, maxDelay)
    }
}
