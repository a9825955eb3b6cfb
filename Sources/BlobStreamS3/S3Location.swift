import BlobStream
import Foundation

/// A bucket and a key: `s3://bucket/key`.
public struct S3Location: Sendable, Hashable, CustomStringConvertible {
    /// The bucket's name.
    public var bucket: String
    /// The object's key (may hold `/`; never empty).
    public var key: String

    /// Makes a location.
    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }

    /// Reads `s3://bucket/key`; the key is taken as written (percent signs are part of it).
    ///
    /// - Throws: `BlobStreamError` `.invalidConfiguration` naming the URL when it is not of that form.
    public init(url: String) throws(BlobStreamError) {
        guard url.hasPrefix("s3://") else {
            throw BlobStreamError.s3(.invalidConfiguration, "'\(url)' is not an s3://bucket/key URL")
        }
        let rest = url.dropFirst(5)
        guard let slash = rest.firstIndex(of: "/"), slash != rest.startIndex,
            rest.index(after: slash) != rest.endIndex
        else {
            throw BlobStreamError.s3(.invalidConfiguration, "'\(url)' has no bucket or no key (s3://bucket/key)")
        }
        bucket = String(rest[..<slash])
        key = String(rest[rest.index(after: slash)...])
    }

    /// `s3://bucket/key`.
    public var description: String { "s3://\(bucket)/\(key)" }
}
