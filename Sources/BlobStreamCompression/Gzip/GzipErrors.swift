import BlobStream

/// The errors `GzipDataSource` reports, each naming the source and the compressed offset.
/// Codes: `.truncated` for input that ends early, `.corrupt` (with a `ZlibError` or
/// `IsalError` cause when the inflater refused the data) for damaged input, `.invalidOffset` for an offset past the end,
/// the upstream's own code when the upstream fails.
package struct GzipErrors {
    /// How messages name the source.
    package let name: String

    /// Errors naming `name`.
    package init(name: String) { self.name = name }

    package func zlibInit(_ cause: any Error) -> BlobStreamError {
        BlobStreamError(.sourceFailed, "\(name): cannot initialize zlib", cause: cause)
    }

    package func notOpen() -> BlobStreamError { BlobStreamError(.notOpen, "\(name): not open") }

    package func noProgress(at offset: Int64, member: Int) -> BlobStreamError {
        BlobStreamError(
            .corrupt, "\(name): the inflater made no progress at compressed offset \(offset) in member \(member + 1)")
    }

    package func truncated(at offset: Int64, member: Int, memberStart: Int64) -> BlobStreamError {
        let what =
            member == 0 && offset == 0
            ? "the input is empty (an empty input is not a gzip stream)"
            : "the input ends inside member \(member + 1) (which starts at compressed offset \(memberStart))"
        return BlobStreamError(.truncated, "\(name): truncated gzip stream at compressed offset \(offset): \(what)")
    }

    /// The inflater (zlib or ISA-L) refused the data: its words, its error as the cause.
    package func corrupt(at offset: Int64, member: Int, memberStart: Int64, _ failure: InflateFailure)
        -> BlobStreamError
    {
        BlobStreamError(
            .corrupt,
            "\(name): corrupt gzip data at compressed offset \(offset) in member \(member + 1) (which starts at compressed offset \(memberStart)): \(failure.message)",
            cause: failure.cause)
    }

    package func corrupt(at offset: Int64, member: Int, memberStart: Int64, _ zlibError: ZlibError) -> BlobStreamError {
        corrupt(at: offset, member: member, memberStart: memberStart, InflateFailure(zlibError))
    }

    package func trailingGarbage(at offset: Int64, afterMember member: Int, byte: UInt8) -> BlobStreamError {
        BlobStreamError(
            .corrupt,
            "\(name): trailing garbage at compressed offset \(offset) after gzip member \(member + 1): byte 0x\(String(byte, radix: 16)) does not start a gzip member"
        )
    }

    package func garbageAfterPadding(at offset: Int64) -> BlobStreamError {
        BlobStreamError(
            .corrupt,
            "\(name): trailing garbage at compressed offset \(offset) after the zero padding that follows the last gzip member"
        )
    }

    package func pastTheEnd(_ target: Int64, inflated: Int64) -> BlobStreamError {
        BlobStreamError(
            .invalidOffset, "\(name): offset \(target) is past the end of the decompressed bytes (\(inflated) bytes)")
    }

    /// The upstream's error, with its code (`.sourceFailed` when it is not a
    /// `BlobStreamError`) and as the cause.
    package func upstream(_ error: any Error, _ what: String, at offset: Int64) -> BlobStreamError {
        let code = (error as? BlobStreamError)?.code ?? .sourceFailed
        return BlobStreamError(
            code, "\(name): the upstream \(what) at compressed offset \(offset): \(error)", cause: error)
    }

    package func starvedRead(at offset: Int64) -> BlobStreamError {
        BlobStreamError(
            .sourceFailed,
            "\(name): read was called while the upstream has no bytes available at compressed offset \(offset) (the upstream announced bytes it does not have, or the owner broke contract rule 2)"
        )
    }

    package func refusedOffset(_ offset: Int64, _ why: String) -> BlobStreamError {
        BlobStreamError(.invalidOffset, "\(name): cannot move to offset \(offset): \(why)")
    }

    /// A jump to a seek point that failed: a damaged or unreadable index (a window that can
    /// no longer be read from its file) keeps its code; anything else refuses the offset.
    package func failedJump(to offset: Int64, _ error: BlobStreamError) -> BlobStreamError {
        guard error.code == .corrupt || error.code == .ioFailed else { return refusedOffset(offset, error.message) }
        return BlobStreamError(error.code, "\(name): cannot move to offset \(offset): \(error.message)", cause: error)
    }
}
