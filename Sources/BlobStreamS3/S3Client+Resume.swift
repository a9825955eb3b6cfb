import BlobStream
import Foundation

/// How `S3UploadOptions.Resume.latest` finds the unfinished upload to continue.
///
/// A store's ListMultipartUploads may lag behind its CreateMultipartUpload (OpenStack
/// Swift's s3api does: an upload just created may not be listed yet), so an empty listing
/// is asked again a few times, with a short backoff, before "nothing to resume" is believed.
public struct S3ResumeLookup: Sendable, Equatable {
    /// What to do when several unfinished uploads exist for the key.
    public enum Choice: Sendable, Equatable {
        /// Continue the newest (by its `Initiated` time).
        case newest
        /// Refuse with `.severalUploadsToResume`, listing them newest first (the tool does:
        /// it never guesses which upload the user meant).
        case refuse
    }

    /// How often the listing is asked while it is empty (at least 1).
    public var attempts: Int
    /// The wait before the second listing; it doubles for each further one.
    public var delay: Duration
    /// What several unfinished uploads mean.
    public var whenSeveral: Choice

    /// A lookup: by default 4 listings from 250 ms apart (under 2 s in all), the newest upload
    /// when there are several.
    public init(attempts: Int = 4, delay: Duration = .milliseconds(250), whenSeveral: Choice = .newest) {
        self.attempts = attempts
        self.delay = delay
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
        var delay = lookup.delay
        var pending: [S3PendingUpload] = []
        for attempt in 1...max(lookup.attempts, 1) {
            pending = try await list()
            if !pending.isEmpty || attempt == max(lookup.attempts, 1) { break }
            try await Task.sleep(for: delay)
            delay *= 2
        }
        // ISO 8601 times of one store sort as text; the upload id breaks ties the same way every time.
        let newestFirst = pending.sorted { ($0.initiated, $0.uploadID) > ($1.initiated, $1.uploadID) }
        guard let newest = newestFirst.first else {
            throw BlobStreamError.s3(
                .noUploadToResume,
                "no unfinished upload of \(location) to resume (listed \(max(lookup.attempts, 1)) times)")
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
