import BlobStream
import BlobStreamHTTPClient
import BlobStreamUpload
import Foundation
import NIOCore

/// How an upload to S3 is done: part size, parallelism, retries, object headers, resume.
public struct S3UploadOptions: Sendable {
    /// S3's smallest part (but the last): 5 MiB.
    public static let minimumPartSize = 5 << 20
    /// S3's largest part (and largest single PutObject): 5 GiB.
    public static let maximumPartSize = 5 << 30
    /// S3's most parts in one upload: 10,000.
    public static let maximumParts = 10_000
    /// The largest part held in one memory buffer: 4 GiB less 65 bytes (a `ByteBuffer`'s
    /// capacity is a `UInt32`, and the buffer keeps 64 bytes to align its start). A source
    /// that cannot seek (a pipe) must use parts no larger: each is held in memory until sent.
    /// (A part of a source that can seek is held only up to 8 MiB: a larger one is hashed,
    /// then streamed from the source.)
    public static let largestPartInMemory = Int(UInt32.max) - ByteBuffer.alignmentSlack

    /// Which unfinished upload to continue.
    public enum Resume: Sendable, Equatable {
        /// Start a new upload.
        case no
        /// The unfinished upload of the key that ListMultipartUploads lists, found as
        /// `resumeLookup` says (the newest by default).
        case latest
        /// The upload with this id.
        case uploadID(String)
    }

    /// The size of every part but the last (5 MiB to 5 GiB; raised for a source of known
    /// length so that it needs at most 10,000 parts). A source no longer than one part goes
    /// in a single PutObject. A source that cannot seek takes at most `largestPartInMemory`.
    public var partSize: Int
    /// How many parts are read and sent at once (at least 1).
    public var parallelism: Int
    /// The object's `Content-Type`.
    public var contentType: String?
    /// User metadata, stored as `x-amz-meta-NAME`.
    public var metadata: [(String, String)]
    /// How a failed request of the upload (a part, the upload's creation and completion,
    /// the lookups of a resumed upload, the final HEAD) is tried again: the policy remote
    /// reads use (`HTTPRangeOptions.retry`), by default at most 5 attempts of each request
    /// after jittered waits of about 1, 2, 4, 8 s, and at most 30 s during which the upload
    /// waits on the store (waits of parts in flight together count once), so that a store
    /// down for a few seconds is ridden through. Retried: 5xx, connection failures,
    /// timeouts (an idle timeout `idleTimeoutRetries` times), `BadDigest`, `SlowDown`,
    /// `RequestTimeout`; never refused credentials, other 4xx, a failed TLS handshake.
    /// `.none`: each request is sent once.
    public var retry: HTTPRetryPolicy
    /// Which upload to continue, if any.
    public var resume: Resume
    /// True (the default): an upload that fails or is cancelled is aborted, so that the
    /// store keeps no parts. False keeps them, for `resume` later.
    public var abortsOnFailure: Bool
    /// How `.latest` finds the upload: listings asked again while empty, and what several mean.
    public var resumeLookup = S3ResumeLookup()
    /// Called once with the multipart upload's id when it is created or found, before any
    /// part is sent (not for a source that goes in one PutObject): a program can show it, so
    /// that the user can resume with it after a crash.
    public var uploadStarted: (@Sendable (_ uploadID: String) -> Void)?

    /// The checksum S3 stores beside the object (awscli's `--checksum-algorithm`): sent with
    /// every request of the upload (`x-amz-checksum-…`), and for a multipart upload the
    /// parts' checksums in CompleteMultipartUpload. A store that keeps no S3 checksums
    /// (OpenStack Swift's s3api) fails a multipart upload with `.checksumNotSupported` before
    /// any part is sent. Nil: as `checksumCalculation` says.
    public var checksumAlgorithm: S3ChecksumAlgorithm? = nil
    /// How a multipart upload's checksum covers the object (nil: the algorithm's own,
    /// `S3ChecksumAlgorithm.defaultType`; `.fullObject` takes a CRC only).
    public var checksumType: S3ChecksumType? = nil
    /// When a checksum is sent without `checksumAlgorithm` (awscli's
    /// `request_checksum_calculation`).
    public var checksumCalculation: S3ChecksumCalculation = .whenSupported
    /// The one check of each request's body that the signature covers and the store
    /// verifies (`.automatic`: the cheapest such, see `S3BodyCheck`).
    public var bodyCheck: S3BodyCheck = .automatic
    /// The object's `Cache-Control`.
    public var cacheControl: String? = nil
    /// The object's `Content-Disposition`.
    public var contentDisposition: String? = nil
    /// The object's `Content-Encoding` (the bytes are sent as they are).
    public var contentEncoding: String? = nil
    /// The object's storage class (`x-amz-storage-class`: `STANDARD`, `STANDARD_IA`, …).
    public var storageClass: String? = nil
    /// Server-side encryption (`x-amz-server-side-encryption`: `AES256`, `aws:kms`).
    public var serverSideEncryption: String? = nil
    /// The object's tags, URL-encoded `KEY=VALUE&…` (`x-amz-tagging`).
    public var tagging: String? = nil

    /// Parts larger than this are not held in memory but streamed from their source
    /// (`largestPartInMemory`; tests make it small to reach that path with small parts).
    package var partsInMemoryUpTo = S3UploadOptions.largestPartInMemory

    /// Called with the multipart upload's id when a failure or a cancellation leaves it open
    /// on the store (the abort failed, or `abortsOnFailure` is false): the tool names it,
    /// with the commands that resume or end it, also after an interrupt.
    package var uploadLeftOpen: (@Sendable (_ uploadID: String) -> Void)? = nil

    /// The largest part of a file (a source that can seek) held in memory, read once: a
    /// larger one is read twice from the file at its offset (hashed, then streamed as it is
    /// sent), so that an upload from a file holds at most about `parallelism` × 8 MiB
    /// whatever the part size (4 × 256 MiB parts would be 1 GiB).
    static let filePartsInMemoryUpTo = 8 << 20

    /// The largest part of a file held in memory (`filePartsInMemoryUpTo`, or less in tests).
    var filePartInMemoryLimit: Int { min(partsInMemoryUpTo, Self.filePartsInMemoryUpTo) }

    /// Options with the defaults: 8 MiB parts, 4 in flight, retries as remote reads do them
    /// (`HTTPRetryPolicy()`).
    public init(
        partSize: Int = 8 << 20, parallelism: Int = 4, contentType: String? = nil, metadata: [(String, String)] = [],
        retry: HTTPRetryPolicy = HTTPRetryPolicy(), resume: Resume = .no, abortsOnFailure: Bool = true
    ) {
        self.partSize = partSize
        self.parallelism = parallelism
        self.contentType = contentType
        self.metadata = metadata
        self.retry = retry
        self.resume = resume
        self.abortsOnFailure = abortsOnFailure
    }

    /// The part size used for a source of `length` bytes (nil: unknown): at least
    /// `partSize` and 5 MiB, raised to a whole MiB so that the parts are at most 10,000.
    public func effectivePartSize(length: Int64?) -> Int {
        var size = max(partSize, Self.minimumPartSize)
        if let length {
            let needed = (length + Int64(Self.maximumParts) - 1) / Int64(Self.maximumParts)
            if needed > Int64(size) { size = Int(((needed + (1 << 20) - 1) >> 20) << 20) }
        }
        return size
    }
}

/// When an upload sends a checksum it was not asked for (awscli's `request_checksum_calculation`).
public enum S3ChecksumCalculation: String, Sendable, Equatable {
    /// When the store keeps S3 checksums: a multipart upload asks for the full-object
    /// CRC-64/NVME (the checksum S3 keeps for an object sent with none; every upload computes
    /// it anyway, for `UploadResult.crc64nvme`) when it is created, and sends it only if the
    /// store says it keeps it (a single PutObject, which cannot ask first, sends none).
    case whenSupported = "when_supported"
    /// Only when `checksumAlgorithm` names one.
    case whenRequired = "when_required"
}

/// The one check of a request's body that the signature covers and the store verifies:
/// a store refuses a body that does not match it (`BadDigest`, `XAmzContentSHA256Mismatch`),
/// so a part damaged on the way is sent again. Never none.
public enum S3BodyCheck: String, Sendable, Equatable {
    /// The cheapest check the store verifies: over https, to a store that keeps S3 checksums
    /// (it said so when the upload was created), `UNSIGNED-PAYLOAD` with the checksum sent
    /// anyway (as botocore does); otherwise the signed payload SHA-256, which every S3 store
    /// verifies and which costs the client less than MD5 (SHA-256 runs in hardware on
    /// x86-64 with SHA extensions and on ARMv8), and the store less in all than
    /// `Content-MD5` costs the client.
    case automatic
    /// The body's SHA-256 as the signed payload hash (`x-amz-content-sha256`).
    case payloadSHA256 = "payload-sha256"
    /// `UNSIGNED-PAYLOAD` with a signed `Content-MD5`.
    case contentMD5 = "content-md5"
    /// `UNSIGNED-PAYLOAD` with the signed `x-amz-checksum-…` of `checksumAlgorithm`: only for
    /// a store that verifies S3 checksums (OpenStack Swift 2.30's s3api stores them without
    /// checking); a multipart upload to a store that keeps none fails with
    /// `.checksumNotSupported`.
    case checksum
}
