import BlobStream
import Foundation
import NIOHTTP1

extension S3Configuration {
    /// A presigned URL for `method` on the object at `location` in this store: whoever has
    /// it may send that request, without credentials, until `date` plus `expiresIn` seconds
    /// (S3 refuses it after, and refuses it when any part of it was changed). As
    /// `aws s3 presign` makes them: SigV4 query signing, the `Host` header the only one
    /// signed, `UNSIGNED-PAYLOAD`. Nothing is sent: the URL is signed here.
    ///
    /// ```swift
    /// let configuration = try S3Configuration.resolve()
    /// let url = try configuration.presignedURL(for: S3Location(bucket: "photos", key: "a.jpg"), expiresIn: 3600)
    /// // curl "$url" > a.jpg
    /// ```
    ///
    /// - Parameters:
    ///   - location: the object the URL names.
    ///   - method: the request it allows (GET by default; PUT lets its holder upload the object).
    ///   - expiresIn: seconds, 1 to 604,800 (7 days, S3's longest).
    ///   - date: when it is signed (now by default).
    /// - Throws: `BlobStreamError` `.invalidConfiguration` when `expiresIn` is out of range.
    public func presignedURL(
        for location: S3Location, method: HTTPMethod = .GET, expiresIn: Int = 3600, date: Date = Date()
    ) throws(BlobStreamError) -> URL {
        guard (1...SigV4Signer.longestPresignedExpiry).contains(expiresIn) else {
            throw BlobStreamError.s3(
                .invalidConfiguration,
                "a presigned URL expires in 1 to \(SigV4Signer.longestPresignedExpiry) seconds (7 days), not \(expiresIn)"
            )
        }
        let target = S3Client.target(self, bucket: location.bucket, key: location.key)
        let request = SigV4Request(method: method.rawValue, path: target.path, headers: [("Host", target.host)])
        let signer = SigV4Signer(credentials: credentials, region: region)
        let signed = signer.presign(request, expiresIn: expiresIn, date: date)
        // The signature last, as AWS's SDKs and awscli write it (the order means nothing to S3).
        let signature = signed.query.filter { $0.name == "X-Amz-Signature" }
        let query =
            SigV4Signer.canonicalQuery(signed.query.filter { $0.name != "X-Amz-Signature" }) + "&"
            + SigV4Signer.canonicalQuery(signature)
        guard let url = URL(string: target.base + signed.encodedPath + "?" + query) else {
            throw BlobStreamError.s3(
                .invalidConfiguration, "cannot make a URL of \(target.base) and \(location)")
        }
        return url
    }
}

extension S3Client {
    /// `S3Configuration.presignedURL` for this client's store.
    public func presignedURL(
        for location: S3Location, method: HTTPMethod = .GET, expiresIn: Int = 3600, date: Date = Date()
    ) throws(BlobStreamError) -> URL {
        try configuration.presignedURL(for: location, method: method, expiresIn: expiresIn, date: date)
    }
}
