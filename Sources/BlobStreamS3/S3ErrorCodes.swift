import BlobStream
import BlobStreamHTTPClient
import BlobStreamUpload
import Foundation

// BlobStreamS3 reports `BlobStreamError`, like every module. S3's answers map to the codes
// that mean the same (refused credentials `.permissionDenied`, a missing key, bucket or upload
// `.notFound`, a body the store found damaged `.corrupt`, other refusals of an upload
// `.uploadFailed`, of another request `.httpFailed`); the message names the operation, the
// bucket and key, S3's error code and message, the HTTP status and the request id. These codes
// join the core's, the upload vocabulary's and the HTTP client's for what only S3 has.
extension BlobStreamError.Code {
    /// No S3 credentials were found (environment, profile files).
    public static let missingCredentials = BlobStreamError.Code("missingCredentials")
    /// An S3 setting is not usable: an endpoint URL, a part size, an `s3://` URL, a checksum
    /// type, a presigned URL's expiry.
    public static let invalidConfiguration = BlobStreamError.Code("invalidConfiguration")
    /// The store answered something this client cannot read (no ETag, no upload id, not XML).
    public static let invalidResponse = BlobStreamError.Code("invalidResponse")
    /// No unfinished upload to resume was found, or it does not match the source.
    public static let noUploadToResume = BlobStreamError.Code("noUploadToResume")
    /// Several unfinished uploads exist for the key, and the lookup would not guess which.
    public static let severalUploadsToResume = BlobStreamError.Code("severalUploadsToResume")
    /// The source needs more parts than S3 allows (10,000).
    public static let tooManyParts = BlobStreamError.Code("tooManyParts")
    /// The store keeps no S3 checksums, and one was asked for (`checksumAlgorithm`, or the
    /// `.checksum` body check).
    public static let checksumNotSupported = BlobStreamError.Code("checksumNotSupported")
}

extension BlobStreamError {
    /// S3's own error code when the store answered with one (`NoSuchUpload`, `BadDigest`,
    /// `SignatureDoesNotMatch`, …; `NotFound`, `AccessDenied` or `InternalError` for an
    /// answer without an error document); nil for any other error.
    public var s3ErrorCode: String? { s3Details?.s3Code }

    /// The multipart upload this failure left open on the store, its parts kept: its abort
    /// failed too (the store was gone), or `S3UploadOptions.abortsOnFailure` was false.
    /// Continue it (`S3UploadOptions.Resume.uploadID`) or end it
    /// (`S3Client.abortMultipartUpload`); nil when the store keeps nothing of the upload (and
    /// for errors of other modules). The message names it too.
    public var s3UploadID: String? { s3Details?.uploadID }

    /// What an S3 failure knows beyond its code and message, when it came from BlobStreamS3.
    package var s3Details: S3FailureDetails? { cause as? S3FailureDetails }

    /// The error beneath an S3 failure (the source's, the connection's), if any.
    package var s3Cause: (any Error)? {
        guard let details = s3Details else { return cause }
        return details.underlying
    }

    /// An S3 failure: `message` names what failed (the operation, bucket and key); the
    /// store's status and request id follow when it answered, then the cause when the message
    /// does not say it.
    static func s3(
        _ code: Code, _ message: String, kind: S3FailureDetails.Kind = .local, s3Code: String? = nil,
        statusCode: Int? = nil, requestID: String? = nil, cause: (any Error)? = nil
    ) -> BlobStreamError {
        var text = message
        if let statusCode { text += " (HTTP \(statusCode)" + (requestID.map { ", request id \($0)" } ?? "") + ")" }
        let details = S3FailureDetails(
            kind: code == .timedOut ? .timeout : kind, s3Code: s3Code, statusCode: statusCode, requestID: requestID,
            underlying: cause)
        if let cause {
            let causeText = String(describing: cause)
            if !text.contains(causeText) { text += ": \(causeText)" }
        }
        guard details.isNeeded else { return BlobStreamError(code, text, cause: cause) }
        var kept = details
        kept.summary = text
        return BlobStreamError(code, text, cause: kept)
    }

    /// The same error, naming the multipart upload it left open on the store.
    func leavingOpen(_ uploadID: String) -> BlobStreamError {
        var details = s3Details ?? S3FailureDetails(kind: .local, underlying: cause)
        details.uploadID = uploadID
        details.summary = "\(description); multipart upload \(uploadID) is left open on the store"
        return BlobStreamError(code, details.summary, cause: details)
    }

    /// True for an S3 failure worth another attempt: a 5xx answer, a connection failure, a
    /// timeout, `BadDigest` (a part damaged on the way), `SlowDown`/`RequestTimeout`; never
    /// for refused credentials, other 4xx answers, a failed TLS handshake, or what the store
    /// does not implement (501 `NotImplemented`: server-side encryption, tagging on
    /// OpenStack Swift).
    var isRetryableS3: Bool {
        guard let details = s3Details else { return code == .timedOut }
        return details.isRetryable
    }
}

/// What an S3 failure knows beyond its code and message (the `cause` of its
/// `BlobStreamError`): S3's code, the status and request id of the store's answer, the upload
/// left open, what kind of failure it was (for the retry decision), and the error beneath.
package struct S3FailureDetails: Error, CustomStringConvertible, Sendable {
    /// Where a failure came from, for the retry decision.
    package enum Kind: Sendable {
        /// A setting, the source, or a check here: never tried again.
        case local
        /// The store's answer (its status and code decide).
        case answer
        /// The store could not be reached or the connection broke.
        case connection
        /// The TLS handshake failed (an untrusted certificate, a wrong host name).
        case tls
        /// No answer in time.
        case timeout
    }

    /// Where the failure came from.
    package var kind: Kind
    /// S3's error code, when the store answered with one.
    package var s3Code: String? = nil
    /// The HTTP status of the store's answer, when it answered.
    package var statusCode: Int? = nil
    /// The store's request id (`x-amz-request-id` or `<RequestId>`), when it gave one.
    package var requestID: String? = nil
    /// The multipart upload the failure left open on the store.
    package var uploadID: String? = nil
    /// The error beneath (the connection's, the source's).
    package var underlying: (any Error)? = nil
    /// The error's whole message, which already says all of the above.
    var summary = ""

    /// S3's codes that mean the request's credentials or signature are refused.
    package static let authenticationCodes: Set<String> = [
        "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AuthorizationHeaderMalformed",
        "InvalidToken", "ExpiredToken", "RequestTimeTooSkewed",
    ]

    /// True when the error carries something besides its code, message and cause.
    var isNeeded: Bool {
        kind != .local || s3Code != nil || statusCode != nil || requestID != nil || uploadID != nil
    }

    /// See `BlobStreamError.isRetryableS3`.
    var isRetryable: Bool {
        if let s3Code, Self.authenticationCodes.contains(s3Code) || s3Code == "NotImplemented" { return false }
        if statusCode == 501 { return false }
        switch kind {
        case .connection, .timeout: return true
        case .tls, .local: return false
        case .answer:
            if let s3Code,
                ["BadDigest", "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "IncompleteBody"]
                    .contains(s3Code)
            {
                return true
            }
            return (statusCode ?? 0) >= 500
        }
    }

    /// The code an answer of the store means: refused credentials, a missing key, bucket or
    /// upload, a body that does not match its check; else `fallback`.
    static func code(forAnswer s3Code: String?, status: Int, fallback: BlobStreamError.Code) -> BlobStreamError.Code {
        if let s3Code, authenticationCodes.contains(s3Code) { return .permissionDenied }
        switch s3Code {
        case "NoSuchKey", "NoSuchBucket", "NoSuchUpload", "NotFound": return .notFound
        case "BadDigest", "XAmzContentSHA256Mismatch": return .corrupt
        case "RequestTimeout": return .timedOut
        default: break
        }
        switch status {
        case 403: return .permissionDenied
        case 404: return .notFound
        default: return fallback
        }
    }

    /// The error beneath, else the whole message (which says what this holds): the
    /// `BlobStreamError`'s description does not say it twice.
    package var description: String {
        underlying.map { String(describing: $0) } ?? summary
    }
}
