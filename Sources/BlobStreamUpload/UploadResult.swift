import Foundation

/// What a finished upload tells, the same for every client (URLSession, AsyncHTTPClient,
/// and the object-store uploads built on them): the final answer's status, its headers and
/// body, and how many body bytes were handed to the client for it.
public struct UploadResult: Sendable {
    /// The final answer's HTTP status code (2xx: an upload that fails throws instead).
    public var statusCode: Int
    /// The final answer's header fields, in the order received (names as the server wrote
    /// them; URLSession on Linux gives them in no particular order).
    public var headers: [(name: String, value: String)]
    /// The answer's body (at most 1 MiB is kept).
    public var body: Data
    /// The body bytes handed to the client for the request that got this answer (after a
    /// redirect, those sent to the last URL): the body's whole length.
    public var bytesSent: Int64

    /// A result with the given values (for other clients that implement `UploadClient`).
    public init(statusCode: Int, headers: [(name: String, value: String)], body: Data, bytesSent: Int64) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.bytesSent = bytesSent
    }

    /// The value of the first header field named `name` (case-insensitive), if any.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
