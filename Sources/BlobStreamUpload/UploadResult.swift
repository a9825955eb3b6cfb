import Foundation

/// What a finished upload tells, the same for every client (URLSession, AsyncHTTPClient,
/// S3): the final answer's status, its headers and body, how many body bytes were handed to
/// the client for it, and what the store says of the object it holds now.
///
/// The fields after `bytesSent` are what an object store adds (`S3Uploader` fills them all);
/// an HTTP upload has the answer's `ETag` as `entityTag` and leaves the others at their
/// defaults (nil, 0, false).
public struct UploadResult: Sendable {
    /// The final answer's HTTP status code (2xx: an upload that fails throws instead).
    public var statusCode: Int
    /// The final answer's header fields, in the order received (names as the server wrote
    /// them; URLSession on Linux gives them in no particular order).
    public var headers: [(name: String, value: String)]
    /// The answer's body (at most 1 MiB is kept).
    public var body: Data
    /// The body bytes handed to the client for the request that got this answer (after a
    /// redirect, those sent to the last URL): the body's whole length. For an upload in
    /// several requests (S3 parts), the bytes of the requests this upload sent (parts already
    /// stored by an earlier attempt, which a resumed upload skips, not counted).
    public var bytesSent: Int64

    /// The stored object's entity tag, without quotes: the final answer's `ETag` header
    /// (nil when the server sent none). S3's is the object's MD5, or for N parts the MD5 of
    /// the parts' MD5s followed by `-N`.
    public var entityTag: String?
    /// Where the object is, when the client names it otherwise than by the URL it was sent
    /// to: `s3://bucket/key` for an S3 upload; nil for an HTTP upload.
    public var location: String? = nil
    /// The stored object's size as the store gave it after the upload (S3: HeadObject, which
    /// the upload checks against the bytes sent); nil when the client did not ask.
    public var objectSize: Int64? = nil
    /// How many parts the object was stored in: 0 for one request (an HTTP upload, an S3
    /// object no larger than one part).
    public var parts: Int = 0
    /// How many of `parts` this upload sent (the others were stored already: a resumed
    /// multipart upload).
    public var partsSent: Int = 0
    /// The id of the multipart upload that stored the object (S3); nil for one request.
    public var uploadID: String? = nil
    /// The object's checksum, base64 as S3 shows it (`-N` after a composite one of N
    /// parts), when one was sent: as the store gave it back, else as computed by the client.
    public var checksum: String? = nil
    /// The checksum's algorithm as S3 names it (`CRC32`, `CRC32C`, `CRC64NVME`, `SHA1`,
    /// `SHA256`), when one was sent.
    public var checksumAlgorithm: String? = nil
    /// True when the store said it keeps `checksum` (it gave it back); false when it took the
    /// request without a word of it (OpenStack Swift's s3api keeps none), or none was sent.
    public var checksumStored = false
    /// The CRC-64/NVME of all the object's bytes, base64 as S3 shows a `FULL_OBJECT`
    /// checksum (`x-amz-checksum-crc64nvme`): computed from the bytes as they were sent (or,
    /// resuming, read to compare with the parts stored), each part's value combined with the
    /// others', with no second pass. `blobstream checksum -a crc64nvme` prints the same
    /// value in hex. Nil for a client that computes none (an HTTP upload).
    public var crc64nvme: String? = nil
    /// What the bytes of a copy were checked against at their source, for a source read from
    /// a server (`s3://`, `https://`): `checked against the store's FULL_OBJECT CRC64NVME
    /// <base64>` (the CRC the source's store keeps, which the bytes read matched), or
    /// `unchecked: <why>` (OpenStack Swift's s3api keeps no checksum; a web server keeps
    /// none). Nil for any other source (a file), or a client that checks none (an HTTP upload).
    public var sourceCheck: String? = nil

    /// A result with the given values (for other clients that implement `UploadClient`);
    /// `entityTag` is the `ETag` header's value, if any, without its quotes.
    public init(statusCode: Int, headers: [(name: String, value: String)], body: Data, bytesSent: Int64) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.bytesSent = bytesSent
        self.entityTag = Self.unquoted(headers.first { $0.name.caseInsensitiveCompare("ETag") == .orderedSame }?.value)
    }

    /// The value of the first header field named `name` (case-insensitive), if any.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// An entity tag without its surrounding quotes (a weak one, `W/"x"`, stays as it is).
    static func unquoted(_ etag: String?) -> String? {
        guard let etag else { return nil }
        return etag.count >= 2 && etag.hasPrefix("\"") && etag.hasSuffix("\"")
            ? String(etag.dropFirst().dropLast()) : etag
    }
}
