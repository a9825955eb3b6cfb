import BlobStream
import Foundation

/// Turns libarchive's and the upstream's failures into `BlobStreamError`s whose message
/// starts with `prefix` (which names the archive, and the member when there is one).
///
/// Each fact is said once: the message says where and what (the archive, the member, what
/// was being done, what libarchive's complaint means), the `cause` holds the underlying
/// error (a `LibArchiveError`, a `ZlibError`, the upstream's own error), whose text is not
/// repeated in the message; `description` then shows both.
enum ArchiveErrors {
    static func translate(_ failure: ArchiveHandle.Failure, input: LibArchiveInput, prefix: String, while doing: String)
        -> BlobStreamError
    {
        switch failure {
        case .input:
            if input.cancelled { return BlobStreamError(.closed, "\(prefix): closed while \(doing)") }
            if input.failureIsOwn, let own = input.failure as? BlobStreamError {
                // The input's own finding (the gzip layer, a wait it cannot do): its message
                // says it, without a prefix; its cause, if any, is zlib's.
                return BlobStreamError(own.code, "\(prefix): \(own.message) while \(doing)", cause: own.cause)
            }
            guard let cause = input.failure else {
                return BlobStreamError(
                    .sourceFailed, "\(prefix): the upstream failed at offset \(input.position) while \(doing)")
            }
            return upstreamFailed(cause, prefix: prefix, "failed at offset \(input.position) while \(doing)")
        case .library(let code, let errno, let message, let format):
            let cause = LibArchiveError(code: code, errno: errno, message: message)
            if message.isEmpty {
                // libarchive failed without a reason: after the input's end, it ran out of bytes.
                return input.sawEnd
                    ? BlobStreamError(
                        .truncated, "\(prefix): the archive is truncated: it ends while \(doing)", cause: cause)
                    : BlobStreamError(
                        .corrupt, "\(prefix): libarchive failed without a reason while \(doing)", cause: cause)
            }
            let (kind, what) = classify(
                message: message, format: format, canSeek: input.canSeek, upstream: input.upstream)
            return BlobStreamError(kind, "\(prefix): \(what) while \(doing)", cause: cause)
        }
    }

    /// The upstream's `error`, as this module reports it: the upstream's code, a message that
    /// says where (`prefix`) and what the upstream did (`what`, after "the upstream "), the
    /// upstream's error as the cause (not repeated in the message).
    static func upstreamFailed(_ error: any Error, prefix: String, _ what: String) -> BlobStreamError {
        let code = (error as? BlobStreamError)?.code ?? .sourceFailed
        return BlobStreamError(code, "\(prefix): the upstream \(what)", cause: error)
    }

    /// The code and a sentence for what libarchive said.
    static func classify(message: String, format: Int32, canSeek: Bool, upstream: any BlobDataSource) -> (
        BlobStreamError.Code, String
    ) {
        let text = message.lowercased()
        if !canSeek && text.contains("seek") {
            let why =
                ArchiveFormat.isSevenZip(format) || text.contains("7-zip")
                ? "7-Zip archives keep their index at the end, so reading one needs an upstream that can seek"
                : "this archive needs an upstream that can seek"
            let limit = (upstream.property(forKey: .blobOffsetLimitKey) as? String).map { ": " + $0 } ?? ""
            return (.unsupported, "\(why), and the upstream (\(type(of: upstream))) cannot seek\(limit)")
        }
        if text.contains("encrypt") || text.contains("passphrase") || text.contains("decrypt") {
            return (.unsupported, "the entry is encrypted (encrypted entries are not supported)")
        }
        if text.contains("truncat") || text.contains("premature") || text.contains("unexpected end")
            || text.contains("eof") || text.contains("end of file")
        {
            return (.truncated, "the archive is truncated")
        }
        if text.contains("checksum") { return (.corrupt, "a header checksum is wrong") }
        if text.contains("crc") { return (.corrupt, "a CRC check failed") }
        if text.contains("unrecognized archive format") {
            return (.corrupt, "the bytes are not an archive in any format libarchive reads")
        }
        return (.corrupt, "the archive is damaged")
    }
}

/// What libarchive reported: the `cause` of the errors of this module that come from it.
public struct LibArchiveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libarchive's return code (`ARCHIVE_FATAL` = −30, `ARCHIVE_FAILED` = −25,
    /// `ARCHIVE_WARN` = −20, `ARCHIVE_RETRY` = −10).
    public var code: Int32
    /// `archive_errno`: an errno value, or one of libarchive's own (`ARCHIVE_ERRNO_MISC` = −1,
    /// `ARCHIVE_ERRNO_FILE_FORMAT` = 84).
    public var errno: Int32
    /// `archive_error_string`.
    public var message: String

    /// Makes one.
    public init(code: Int32, errno: Int32, message: String) {
        self.code = code
        self.errno = errno
        self.message = message
    }

    /// `"libarchive: Truncated tar archive (code -30, errno 84)"`.
    public var description: String { "libarchive: \(message) (code \(code), errno \(errno))" }
}
