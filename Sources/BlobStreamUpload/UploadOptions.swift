import BlobStream
import Foundation

/// The limits of an upload, shared by every `UploadClient` (`URLSessionUploader`,
/// `HTTPClientUploader`).
///
/// ```swift
/// let options = UploadOptions(connectTimeout: .seconds(5), idleTimeout: .seconds(30))
/// let result = try await URLSessionUploader().upload(body, to: url, options: options).result
/// ```
///
/// Every wait is bounded: connecting by `connectTimeout` (a refused connection fails at
/// once), and then any stretch with no byte sent or received by `idleTimeout` — also the
/// wait for the answer after the last byte. Task cancellation ends an upload at once, with
/// `CancellationError`.
public struct UploadOptions: Sendable, Equatable {
    /// The longest wait for the connection (and the first body bytes to go out). Default 10 s.
    public var connectTimeout: Duration
    /// The longest stretch with no byte sent or received, the wait for the answer included.
    /// Default 60 s.
    public var idleTimeout: Duration
    /// How many 307/308 redirects an upload follows (sending the whole body again from a
    /// fresh source each time) before it fails. Default 5; 0 follows none.
    public var maxRedirects: Int

    /// Limits with the given values (the defaults otherwise).
    public init(connectTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(60), maxRedirects: Int = 5) {
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.maxRedirects = maxRedirects
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    package var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// `"2 s"`, `"0.25 s"`.
    package var secondsText: String {
        String(format: "%g s", seconds)
    }
}
