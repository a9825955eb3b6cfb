import Foundation

/// Progress of an upload body as it is read: bytes handed to the client so far, and the
/// total when known. The report with `isFinished` comes exactly once, after the last byte.
public struct UploadProgress: Sendable, Equatable {
    /// Bytes read from the body so far.
    public var sent: Int64
    /// The body's length, when known.
    public var total: Int64?
    /// True on the last report: the body was read to its end.
    public var isFinished: Bool

    /// Makes a report (for other integrations that read upload bodies).
    public init(sent: Int64, total: Int64?, isFinished: Bool) {
        self.sent = sent
        self.total = total
        self.isFinished = isFinished
    }
}
