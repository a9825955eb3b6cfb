import BlobStream
import Foundation

/// Uploads with URLSession (FoundationNetworking), in the shape every client shares
/// (`UploadClient`): `upload(...)` returns an `UploadTask` with progress as an
/// `AsyncSequence` and an `UploadResult`.
///
/// ```swift
/// let upload = URLSessionUploader().upload(body, to: "http://127.0.0.1:8080/files/a.jpg")
/// let result = try await upload.result
/// ```
///
/// What it does on Linux (a session per upload, chunked bodies, redirects, early answers)
/// is told at `URLSessionUpload`; prefer `HTTPClientUploader` (BlobStreamHTTPClient) when
/// sources can be slow: a body stream waiting for its source blocks the session's queue.
public struct URLSessionUploader: UploadClient {
    /// An uploader; each upload makes a session of its own.
    public init() {}

    /// Sends `body` to `url` (see `UploadClient`).
    ///
    /// - Throws: `BlobStreamError` naming the URL (`.malformedURL`, `.timedOut`,
    ///   `.uploadFailed`), or `CancellationError`.
    public func send(
        _ body: UploadBody, to url: URL, method: String, headers: [(name: String, value: String)],
        options: UploadOptions, progress: @escaping @Sendable (UploadProgress) -> Void
    ) async throws -> UploadResult {
        try await URLSessionUpload.perform(
            body, to: url, method: method, headers: headers, options: options, progress: progress)
    }
}
