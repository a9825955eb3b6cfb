import Foundation

/// The error of every S3 operation: a code (S3's own, such as `NoSuchKey` or
/// `SignatureDoesNotMatch`, or one of this module's), a message naming the bucket and key,
/// the HTTP status and request id when the store answered, and the underlying cause.
public struct S3Error: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is; S3's error codes keep their names (`Code("NoSuchKey")`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The name, e.g. `"AccessDenied"`.
        public let name: String
        /// Makes a code.
        public init(_ name: String) { self.name = name }
        /// The code as S3 spells it, such as `NoSuchKey`.
        public var description: String { name }

        /// No credentials were found (environment, profile files).
        public static let missingCredentials = Code("missingCredentials")
        /// A setting is not usable (endpoint URL, part size, an `s3://` URL).
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// The store could not be reached or the connection failed.
        public static let connectionFailed = Code("connectionFailed")
        /// The TLS connection to the store failed (an untrusted certificate, a wrong host
        /// name): not tried again.
        public static let tlsFailed = Code("tlsFailed")
        /// The store did not answer in time.
        public static let timedOut = Code("timedOut")
        /// The store answered something this client cannot read.
        public static let invalidResponse = Code("invalidResponse")
        /// The source failed to open or read; `cause` holds its error.
        public static let sourceFailed = Code("sourceFailed")
        /// The source changed while it was uploaded (its identity or length).
        public static let sourceChanged = Code("sourceChanged")
        /// The stored object is not what was sent (size, ETag, part count).
        public static let verificationFailed = Code("verificationFailed")
        /// No unfinished upload to resume was found, or it does not match the source.
        public static let noUploadToResume = Code("noUploadToResume")
        /// The source needs more parts than S3 allows (10,000).
        public static let tooManyParts = Code("tooManyParts")

        /// S3's codes that mean the request's credentials or signature are refused.
        public static let authenticationCodes: Set<Code> = [
            Code("AccessDenied"), Code("InvalidAccessKeyId"), Code("SignatureDoesNotMatch"),
            Code("AuthorizationHeaderMalformed"), Code("InvalidToken"), Code("ExpiredToken"),
            Code("RequestTimeTooSkewed"),
        ]
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence naming what failed, e.g. `"PUT s3://photos/a.jpg: …"`.
    public var message: String
    /// The HTTP status of the store's answer, when it answered.
    public var statusCode: Int?
    /// The store's request id (`x-amz-request-id` or `<RequestId>`), when it gave one.
    public var requestID: String?
    /// The bucket the request was for.
    public var bucket: String?
    /// The key the request was for.
    public var key: String?
    /// The underlying error (connection, source, …).
    public var cause: (any Error)?
    /// The multipart upload this failure left open on the store, its parts kept: its abort
    /// failed too (the store was gone), or `abortsOnFailure` was false. Continue it
    /// (`S3UploadOptions.Resume.uploadID`) or end it (`S3Client.abortMultipartUpload`);
    /// nil when the store keeps nothing of the upload.
    public var uploadID: String?

    /// Makes an error.
    public init(
        _ code: Code, _ message: String, statusCode: Int? = nil, requestID: String? = nil, bucket: String? = nil,
        key: String? = nil, cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.statusCode = statusCode
        self.requestID = requestID
        self.bucket = bucket
        self.key = key
        self.cause = cause
    }

    /// True for an error worth another attempt: a 5xx answer, a connection failure, a
    /// timeout, `BadDigest` (a part damaged on the way), `SlowDown`/`RequestTimeout`; never
    /// for refused credentials, other 4xx answers, or what the store does not implement
    /// (501 `NotImplemented`: server-side encryption, tagging on OpenStack Swift).
    public var isRetryable: Bool {
        if Code.authenticationCodes.contains(code) || code == Code("NotImplemented") || statusCode == 501 {
            return false
        }
        switch code {
        case .connectionFailed, .timedOut, Code("BadDigest"), Code("SlowDown"), Code("RequestTimeout"),
            Code("InternalError"), Code("ServiceUnavailable"), Code("IncompleteBody"):
            return true
        default:
            return (statusCode ?? 0) >= 500
        }
    }

    /// The message, then the status, the request id and the cause when present, and the
    /// multipart upload left open on the store, if any.
    public var description: String {
        var text = message
        if let statusCode { text += " (HTTP \(statusCode)" + (requestID.map { ", request id \($0)" } ?? "") + ")" }
        if let cause {
            let causeText = String(describing: cause)
            if !text.contains(causeText) { text += ": \(causeText)" }
        }
        if let uploadID { text += "; multipart upload \(uploadID) is left open on the store" }
        return text
    }
}

extension S3Error: CustomNSError {
    /// `"BlobStreamS3"`.
    public static var errorDomain: String { "BlobStreamS3" }
    /// The description as the localized description.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: description] }
}
