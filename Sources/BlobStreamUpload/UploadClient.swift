import Foundation

/// A client that can send an `UploadBody`: the one upload shape every client offers
/// (`URLSessionUploader` in BlobStreamNetworking, `HTTPClientUploader` in
/// BlobStreamHTTPClient, `S3Uploader` in BlobStreamS3 for `s3://bucket/key`), so that code
/// built on uploads takes `any UploadClient` and does not care which.
///
/// ```swift
/// let upload = HTTPClientUploader().upload(body, to: "http://127.0.0.1:8080/files/a.jpg")
/// for await report in upload.progress { print(report.sent, "of", report.total ?? -1) }
/// let result = try await upload.result     // UploadResult: status, headers, body, bytes sent
/// ```
///
/// ## Implementing
/// Implement `send(_:to:method:headers:options:progress:)`; `upload(...)` comes with it.
/// A client of another scheme than http(s) also implements `uploadURL(_:)`.
/// A conformer must:
/// - validate the URL before any I/O (`UploadURL.validate(_:)`, or its own `uploadURL(_:)`);
/// - send the whole body from a fresh source each time it starts again (a 307/308 redirect
///   when `body.isRepeatable`, failing with `.uploadFailed` naming the redirect otherwise);
/// - treat a 2xx answer before the last body byte was handed over as `.uploadFailed`, never
///   success; apply `options`' connect and idle timeouts (`.timedOut`);
/// - end at once with `CancellationError` when its task is cancelled;
/// - report progress as body bytes are handed over, with exactly one `isFinished` report
///   per attempt that reaches the body's end.
public protocol UploadClient: Sendable {
    /// Sends `body` to `url` and returns the final answer; see the protocol's requirements.
    ///
    /// - Throws: `BlobStreamError` (`.malformedURL`, `.timedOut`, `.uploadFailed`) naming
    ///   the URL, or `CancellationError`.
    func send(
        _ body: UploadBody, to url: URL, method: String, headers: [(name: String, value: String)],
        options: UploadOptions, progress: @escaping @Sendable (UploadProgress) -> Void
    ) async throws -> UploadResult

    /// The URL `upload(_:to:method:headers:options:)` sends to, checked before any I/O. The
    /// default takes http and https URLs (`UploadURL.validate(_:)`); a client of another
    /// scheme (`s3://bucket/key`) takes its own.
    ///
    /// - Throws: `BlobStreamError` `.malformedURL` naming the URL and what is wrong with it.
    func uploadURL(_ string: String) throws -> URL
}

extension UploadClient {
    /// An http or https URL, checked by `UploadURL.validate(_:)`.
    ///
    /// - Throws: `BlobStreamError` `.malformedURL` naming the URL and what is wrong with it.
    public func uploadURL(_ string: String) throws -> URL {
        try UploadURL.validate(string)
    }
}

extension UploadClient {
    /// Starts sending `body` to `url` at once and returns the running upload: iterate its
    /// `progress` while it runs, await its `result`. Cancelling the task that awaits
    /// `result` (or calling `cancel()`) ends the upload with `CancellationError`.
    ///
    /// A URL that no upload can go to is reported by `result` (`.malformedURL`), before any
    /// I/O.
    public func upload(
        _ body: UploadBody, to url: String, method: String = "PUT", headers: [(name: String, value: String)] = [],
        options: UploadOptions = UploadOptions()
    ) -> UploadTask {
        UploadTask { progress in
            try await send(
                body, to: try uploadURL(url), method: method.uppercased(), headers: headers, options: options,
                progress: progress)
        }
    }
}
