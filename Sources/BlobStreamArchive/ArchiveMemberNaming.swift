import BlobStream

// The errors of `ArchiveMemberDataSource`: every one a `BlobStreamError` whose message starts
// with `archive '<name>', member '<member>'`, with the underlying error as its cause (said
// once: see `ArchiveErrors`).

/// How an `ArchiveMemberDataSource` names its archive and its member, and the name's bytes
/// it matches: set once, when it is made. Its readers make their errors with it.
struct ArchiveMemberNaming: Sendable {
    /// The member's name as asked for (`ArchiveMemberDataSource.member`).
    let member: String
    /// How messages name the archive: its path, its URL, or a description of the upstream.
    let archiveName: String
    /// The name's bytes to match, normalized (see `ArchiveMemberDataSource.normalized`).
    let wanted: [UInt8]
    /// How messages name the member: `BlobURL.escapedName` of its bytes, one line, no
    /// terminal escapes.
    let spelling: String

    /// How every message starts: the archive and the member.
    var messagePrefix: String { "archive '\(archiveName)', member '\(spelling)'" }

    /// An error the source found itself.
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
