import BlobStream
import BlobStreamHTTPClient
import Foundation

/// How `S3UploadOptions.Resume.latest` finds the unfinished upload to continue.
///
/// A store's ListMultipartUploads may lag behind its CreateMultipartUpload (OpenStack
/// Swift's s3api does: an upload just created may not be listed yet), so an empty listing
/// is asked again under `retry`, the package's one retry policy (`HTTPRetryPolicy`: its
/// attempts, jittered exponential waits and waiting budget), before "nothing to resume" is
/// believed. (A listing that fails is tried again as any request of the upload is.)
public struct S3ResumeLookup: Sendable, Equatable {
    /// What to do when several unfinished uploads exist for the key.
    public enum Choice: Sendable, Equatable {
        /// Continue the newest (by its `Initiated` time).
        case newest
        /// Refuse with `.severalUploadsToResume`, listing them newest first (the tool does:
        /// it never guesses which upload the user meant).
        case refuse
    }

    /// How often, and after what waits, the listing is asked while it is empty:
    /// `maxAttempts` listings, waits from `initialDelay` growing by `multiplier` (jittered),
    /// `maxWaiting` in all.
    public var retry: HTTPRetryPolicy
    /// What several unfinished uploads mean.
    public var whenSeveral: Choice

    /// The default `retry`: 4 listings, waits of about 250, 500 and 1000 ms (jittered), 2 s of
    /// waiting at most.
    public static let defaultRetry = HTTPRetryPolicy(
        maxAttempts: 4, maxWaiting: .seconds(2), initialDelay: .milliseconds(250), maxDelay: .seconds(1))

    /// A lookup: by default 4 listings (`defaultRetry`), the newest upload when there are several.
    public init(retry: HTTPRetryPolicy = S3ResumeLookup.defaultRetry, whenSeveral: Choice = .newest) {
        self.retry = retry
        self.whenSeveral = whenSeveral
    }
}

extension S3Client {
    /// The unfinished upload of `location` to continue, as `lookup` says: the listing is
    /// asked again while empty (bounded), then one upload is chosen or several refused.
    ///
    /// - Throws: `BlobStreamError` `.noUploadToResume` when none is listed after the last attempt;
    ///   `.severalUploadsToResume` (their ids and start times, newest first, in the message)
    ///   when several are and `lookup.whenSeveral` is `.refuse`; the listing's errors.
    public func findUploadToResume(_ location: S3Location, lookup: S3ResumeLookup = S3ResumeLookup()) async throws
        -> S3PendingUpload
    {
        try await findUploadToResume(location, lookup: lookup) { try await listMultipartUploads(location) }
    }

    /// `findUploadToResume(_:lookup:)` with the listing `list` gives (an upload's, whose
    /// requests are tried again as its retry policy says).
    func findUploadToResume(
        _ location: S3Location, lookup: S3ResumeLookup, list: () async throws -> [S3PendingUpload]
    ) async throws -> S3PendingUpload {
        let budget = RetryBudget(policy: lookup.retry)
        var pending: [S3PendingUpload] = []
        var listings = 0
        while true {
            pending = try await list()
            listings += 1
            guard pending.isEmpty, let wait = budget.wait(after: listings, reason: .failure) else { break }
            try await Task.sleep(for: wait)
        }
        // ISO 8601 times of one store sort as text; the upload id breaks ties the same way every time.
        let newestFirst = pending.sorted { ($0.initiated, $0.uploadID) > ($1.initiated, $1.uploadID) }
        guard let newest = newestFirst.first else {
            throw BlobStreamError.s3(
                .noUploadToResume,
                "no unfinished upload of \(location) to resume (listed \(listings) times)")
        }
        if newestFirst.count > 1, lookup.whenSeveral == .refuse {
            let listed = newestFirst.map { "\($0.uploadID) (started \($0.initiated))" }.joined(separator: ", ")
            throw BlobStreamError.s3(
                .severalUploadsToResume,
                "\(newestFirst.count) unfinished uploads of \(location), newest first: \(listed); name the one to resume"
            )
        }
        return newest
    }
}
