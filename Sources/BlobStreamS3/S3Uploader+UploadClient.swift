import BlobStream
import BlobStreamUpload
import Foundation

extension S3Uploader: UploadClient {
    /// An `s3://bucket/key` URL (the key as written: percent signs are part of it), checked
    /// before any I/O; the upload's `s3://` URL for `send(_:to:method:headers:options:progress:)`.
    ///
    /// - Throws: `BlobStreamError` `.malformedURL` naming the URL when it is not of that form.
    public func uploadURL(_ string: String) throws -> URL {
        let location: S3Location
        do {
            location = try S3Location(url: string)
        } catch {
            throw BlobStreamError(.malformedURL, "'\(string)' is not a valid S3 upload URL: write s3://bucket/key")
        }
        return try Self.url(of: location)
    }

    /// Uploads `body` to the `s3://bucket/key` of `url` with `options` (this uploader's S3
    /// settings) and returns what the store answered; see `UploadClient`.
    ///
    /// `headers` set the object's: `Content-Type`, `Cache-Control`, `Content-Disposition`,
    /// `Content-Encoding`, `x-amz-storage-class`, `x-amz-server-side-encryption`,
    /// `x-amz-tagging` and `x-amz-meta-NAME` (user metadata); the body's `contentType` is the
    /// object's when neither they nor `options` give one. The connect and idle limits are
    /// those of the client's HTTP client, set when it was made (`S3Client.sharedHTTPClient`:
    /// 10 s and 60 s, the defaults of `UploadOptions`; `HTTPConnectionOptions` for a client
    /// made with `S3Client(configuration:connection:)`), and each request is bounded by
    /// `S3Client.requestTimeout`: `options` with other limits are refused (not ignored),
    /// naming where to set them. S3 requests follow no redirect (`maxRedirects` does not apply).
    ///
    /// - Parameters:
    ///   - body: what to upload; its `name` names it in messages.
    ///   - url: `s3://bucket/key` (see `uploadURL(_:)`).
    ///   - method: `PUT`: an object is stored whole.
    ///   - headers: the object's header fields (see above).
    ///   - options: the upload's limits (see above).
    ///   - progress: called with the bytes of the parts stored so far, and once with
    ///     `isFinished` when the object is complete.
    /// - Throws: `BlobStreamError` naming the bucket and key: `.malformedURL` for a URL that
    ///   is not `s3://bucket/key`; `.invalidConfiguration` for another method or header,
    ///   connect or idle limits other than the defaults, or a setting the source cannot take; `.permissionDenied`, `.notFound`, `.corrupt` (a body
    ///   the store found damaged, an object that is not what was sent), `.uploadFailed` for
    ///   other refusals, with S3's code (`s3ErrorCode`), the HTTP status and the request id in
    ///   the message; `.ioFailed`, `.timedOut`; `.sourceFailed`, `.changed` for the source;
    ///   `.checksumNotSupported`, `.tooManyParts`, `.noUploadToResume`. An error that leaves
    ///   the multipart upload on the store names it (`s3UploadID`). `CancellationError` when
    ///   the task is cancelled (the upload is aborted unless `abortsOnFailure` is false).
    public func send(
        _ body: UploadBody, to url: URL, method: String, headers: [(name: String, value: String)],
        options: UploadOptions, progress: @escaping @Sendable (UploadProgress) -> Void
    ) async throws -> UploadResult {
        let location = try Self.location(of: url)
        guard method.uppercased() == "PUT" else {
            throw BlobStreamError(
                .invalidConfiguration, "\(location): an S3 upload is a PUT, not \(method)")
        }
        let defaults = UploadOptions()
        guard options.connectTimeout == defaults.connectTimeout, options.idleTimeout == defaults.idleTimeout else {
            throw BlobStreamError(
                .invalidConfiguration,
                "\(location): an S3 upload's connect and idle limits are its S3Client's: set them with "
                    + "S3Client(configuration:connection:) and HTTPConnectionOptions, not UploadOptions")
        }
        var settings = self.options
        for (name, value) in headers { try settings.setObjectHeader(name, value, for: location) }
        if settings.contentType == nil { settings.contentType = body.contentType }
        return try await S3MultipartUpload(
            client: client, uploadBody: body, location: location, options: settings, progress: progress
        ).run()
    }

    /// `s3://bucket/key` as a URL whose path is the key, percent-encoded where a URL needs it.
    static func url(of location: S3Location) throws -> URL {
        var components = URLComponents()
        components.scheme = "s3"
        components.host = location.bucket
        components.path = "/" + location.key
        guard let url = components.url else {
            throw BlobStreamError(
                .malformedURL, "'\(location)' is not a valid S3 upload URL: the bucket is not a host name")
        }
        return url
    }

    /// The bucket and key of an `s3://` URL (`url(of:)`'s inverse).
    static func location(of url: URL) throws -> S3Location {
        guard url.scheme?.lowercased() == "s3",
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let bucket = components.host, !bucket.isEmpty, components.path.count > 1
        else {
            throw BlobStreamError(
                .malformedURL, "'\(url.absoluteString)' is not a valid S3 upload URL: write s3://bucket/key")
        }
        return S3Location(bucket: bucket, key: String(components.path.dropFirst()))
    }
}

extension S3UploadOptions {
    /// Takes the object header field `name` (see `S3Uploader.send`), or refuses it naming it.
    mutating func setObjectHeader(_ name: String, _ value: String, for location: S3Location) throws {
        let lowered = name.lowercased()
        switch lowered {
        case "content-type": contentType = value
        case "cache-control": cacheControl = value
        case "content-disposition": contentDisposition = value
        case "content-encoding": contentEncoding = value
        case "x-amz-storage-class": storageClass = value
        case "x-amz-server-side-encryption": serverSideEncryption = value
        case "x-amz-tagging": tagging = value
        case _ where lowered.hasPrefix("x-amz-meta-") && lowered.count > 11:
            metadata.append((String(name.dropFirst(11)), value))
        default:
            throw BlobStreamError(
                .invalidConfiguration,
                "\(location): an S3 upload takes the object's Content-Type, Cache-Control, Content-Disposition, Content-Encoding, x-amz-storage-class, x-amz-server-side-encryption, x-amz-tagging and x-amz-meta-NAME header fields, not \(name)"
            )
        }
    }
}
