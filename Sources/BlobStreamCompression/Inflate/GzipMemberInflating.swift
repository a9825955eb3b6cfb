/// The seam between the gzip readers and whoever inflates: zlib (`ZlibMemberInflater`) or ISA-L
/// (`IsalMemberInflater`). A conformer inflates ONE gzip member at a time, header to trailer:
///
/// - `inflate` takes what it can of `input` and writes what it can into `output`; it
///   reports `.memberEnd` once the member's trailer was read and its CRC-32 and ISIZE
///   matched, and consumes no byte past that trailer (the caller looks at what follows:
///   another member, padding or garbage);
/// - a call that consumes and produces nothing with `.ok` means it needs more input;
/// - `.failed` is final for the member: the caller reports it, and does not call again;
/// - `reset()` gets ready for the next member; `end()` frees the state (later calls fail).
///
/// Not thread-safe: the owner serializes calls. `package` access: `BlobStreamArchive`
/// inflates the gzip layer of a `.tar.gz` through it too.
package protocol GzipMemberInflating: AnyObject {
    /// Inflates from `input` into `output` (at most `UInt32.max` of each per call).
    func inflate(
        _ input: UnsafeRawPointer, count inputCount: Int,
        into output: UnsafeMutablePointer<UInt8>, capacity outputCount: Int
    ) -> InflateStep
    /// Gets ready for the next member (keeps what it allocated).
    func reset()
    /// Frees the state; later calls fail.
    func end()
}

/// What one call to `GzipMemberInflating.inflate` did.
package struct InflateStep {
    /// Input bytes the inflater took (it may hold some of them internally).
    package var consumed: Int
    /// Output bytes it wrote.
    package var produced: Int
    /// How it ended.
    package var result: InflateResult
}

/// How one call to `GzipMemberInflating.inflate` ended.
package enum InflateResult {
    /// Progress (or none possible without more input): call again.
    case ok
    /// The current member ended and its CRC-32 and ISIZE matched.
    case memberEnd
    /// The inflater refused the data.
    case failed(InflateFailure)
}

/// Why an inflater refused the data: the same words for both engines where they mean the
/// same thing (zlib's: `"incorrect data check"`, `"incorrect length check"`, `"header crc
/// mismatch"`, `"incorrect header check"`, ...), and the engine's own error as the cause
/// (`ZlibError` or `IsalError`).
package struct InflateFailure: Error {
    /// What was wrong.
    package var message: String
    /// The engine's error.
    package var cause: any Error & Sendable

    package init(_ error: ZlibError) {
        message = error.message
        cause = error
    }

    package init(_ error: IsalError) {
        message = error.message
        cause = error
    }
}
