import AsyncHTTPClient
import BlobStream
import BlobStreamHTTPClient
import Foundation

/// The upload's requests tried again as its `HTTPRetryPolicy` says (`S3UploadOptions.retry`),
/// with the budget remote reads use (`RetryBudget`): jittered exponential waits, at most
/// `maxAttempts` per request, at most `maxWaiting` of waiting for the whole upload (parts
/// waiting together count once).
extension S3MultipartUpload {
    /// `body`, tried again while it fails with an error worth another attempt and the budget
    /// allows; the last error names the attempts made when there were several.
    func withRetries<T: Sendable>(_ what: String, _ body: @Sendable () async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch let error as BlobStreamError where error.isRetryableS3 {
                guard let wait = retries.wait(after: attempt, reason: Self.reason(error)) else {
                    throw Self.gaveUp(error, attempts: attempt, waited: retries.waited)
                }
                try await Task.sleep(for: wait)
                attempt += 1
            }
        }
    }

    /// An idle timeout (no byte read for the client's read timeout) is tried again as
    /// `idleTimeoutRetries` says; any other failure as `maxAttempts` does.
    static func reason(_ error: BlobStreamError) -> RetryReason {
        if error.code == .timedOut, let cause = error.s3Details?.underlying as? HTTPClientError,
            cause == .readTimeout
        {
            return .idleTimeout
        }
        return .failure
    }

    /// `error` after `attempts` attempts, which its message then names with the upload's
    /// waiting so far (the code and details kept).
    static func gaveUp(_ error: BlobStreamError, attempts: Int, waited: Duration) -> BlobStreamError {
        guard attempts > 1 else { return error }
        let seconds = Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
        var named = error
        named.message += String(format: " (%d attempts; the upload waited %.1f s for the store)", attempts, seconds)
        return named
    }
}
