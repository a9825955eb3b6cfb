import AsyncHTTPClient
import BlobStream
import BlobStreamUpload
import Foundation
import NIOCore
import NIOHTTP1

/// Uploads with AsyncHTTPClient, in the shape every client shares (`UploadClient`):
/// `upload(...)` returns an `UploadTask` with progress as an `AsyncSequence` and an
/// `UploadResult`.
///
/// ```swift
/// let upload = HTTPClientUploader().upload(body, to: "http://127.0.0.1:8080/files/a.jpg")
/// for await report in upload.progress { print(report.sent) }
/// let result = try await upload.result
/// ```
///
/// The body is read on a thread of its own and each chunk is handed to the event loop once
/// (see `HTTPClientUpload` for early answers, and `send(_:to:method:headers:options:progress:)`
/// for redirects and the client's configuration).
public struct HTTPClientUploader: UploadClient {
    /// The client to send with; nil: the client of `pool` for the upload's URL, else the
    /// process's shared pool's, configured from the upload's `UploadOptions`.
    public var client: HTTPClient?
    /// The connection pool to send with when `client` is nil (the sources of the same pool
    /// share its clients; its connection options apply, as for a `client`); nil: the
    /// process's shared pool for the upload's options (never a client of the upload's own).
    public var pool: HTTPClientPool?
    /// The longest the whole request may take.
    public var timeout: TimeAmount
    /// The mode of the `BlobInputStream` the body is read through; both read the same bytes.
    public var mode: BlobInputStream.Mode

    /// An uploader that sends with `client`, else with the client of `pool` for each URL
    /// (neither: the process's shared pool for each upload's options).
    public init(
        client: HTTPClient? = nil, timeout: TimeAmount = .hours(24), mode: BlobInputStream.Mode = .synchronous,
        pool: HTTPClientPool? = nil
    ) {
        self.client = client
        self.pool = pool
        self.timeout = timeout
        self.mode = mode
    }

    /// Sends `body` to `url` (see `UploadClient`).
    ///
    /// Without `client` or `pool`, the upload runs on a client of the process's shared pool
    /// for `options` (`HTTPClientPool`): its connect timeout, no retries after a refused connection (it fails at
    /// once), and redirects handled here: a 307 or 308 sends the whole body again from a
    /// fresh source, at most `options.maxRedirects` times; other redirects are errors that
    /// name them. With a client of yours, its own configuration applies to connecting and
    /// redirects (a redirect it follows also gets the whole body from a fresh source; one
    /// it follows with GET and no body is an error); the idle timeout, cancellation and the
    /// checks of the answer apply either way. Progress starts again from 0 on a redirect.
    ///
    /// - Throws: `BlobStreamError` naming the URL (`.malformedURL`, `.timedOut`,
    ///   `.uploadFailed`, `.closed` once the `pool` is shut down), or `CancellationError`.
    public func send(
        _ body: UploadBody, to url: URL, method: String, headers: [(name: String, value: String)],
        options: UploadOptions, progress: @escaping @Sendable (UploadProgress) -> Void
    ) async throws -> UploadResult {
        let client = try self.client ?? pool?.client(for: url)
        return try await HTTPClientUpload.perform(
            body, to: url, method: HTTPMethod(rawValue: method), headers: headers, client: client, options: options,
            timeout: timeout, mode: mode, progress: progress)
    }
}
