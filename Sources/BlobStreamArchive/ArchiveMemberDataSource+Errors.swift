import BlobStream

// The errors of `ArchiveMemberDataSource`: every one a `BlobStreamError` whose message starts
// with `archive '<name>', member '<member>'`, with the underlying error as its cause (said
// once: see `ArchiveErrors`).

extension ArchiveMemberDataSource {
    /// How every message starts: the archive and the member.
    var messagePrefix: String { "archive '\(archiveName)', member '\(memberSpelling)'" }

    /// An error this source found itself.
    func makeError(_ code: BlobStreamError.Code, _ what: String, cause: (any Error)? = nil) -> BlobStreamError {
        BlobStreamError(code, "\(messagePrefix): \(what)", cause: cause)
    }

    /// The upstream's error: its code, `what` the upstream did, the error as the cause.
    func upstreamFailed(_ upstreamError: any Error, _ what: String) -> BlobStreamError {
        ArchiveErrors.upstreamFailed(upstreamError, prefix: messagePrefix, what)
    }

    /// A failure of libarchive or of the input, met while `doing`.
    func translate(_ failure: ArchiveHandle.Failure, input: LibArchiveInput, while doing: String) -> BlobStreamError {
        ArchiveErrors.translate(failure, input: input, prefix: messagePrefix, while: doing)
    }
}
