import BlobStream

// The upload vocabulary's error codes. Uploads report `BlobStreamError` (code, message
// naming the URL, underlying cause) like every other module; these codes join the core's.
extension BlobStreamError.Code {
    /// An upload did not complete: the server answered with a non-2xx status, answered
    /// before the whole body was sent, redirected it in a way that drops the body, refused
    /// or closed the connection, or the body's source failed.
    public static let uploadFailed = BlobStreamError.Code("uploadFailed")

    /// An upload did not connect within its connect timeout, or its connection stopped
    /// moving (no byte sent or received) for its idle timeout.
    public static let timedOut = BlobStreamError.Code("timedOut")
}
