import BlobStream
import Foundation

extension UploadClient {
    /// Starts sending `body` to `url` at once and returns the running upload; the `URL`
    /// form of `upload(_:to:method:headers:options:)`, checked the same way (its
    /// `absoluteString`, by `uploadURL(_:)`).
    ///
    /// ```swift
    /// let upload = HTTPClientUploader().upload(body, to: serverURL.appendingPathComponent("a.jpg"))
    /// let result = try await upload.result
    /// ```
    ///
    /// A URL that no upload can go to is reported by `result` (`.malformedURL`), before any
    /// I/O.
    public func upload(
        _ body: UploadBody, to url: URL, method: String = "PUT", headers: [(name: String, value: String)] = [],
        options: UploadOptions = UploadOptions()
    ) -> UploadTask {
        upload(body, to: url.absoluteString, method: method, headers: headers, options: options)
    }
}
