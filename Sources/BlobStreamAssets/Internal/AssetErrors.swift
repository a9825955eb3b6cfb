import BlobStream
import Glibc

/// The errors of the module, built in one place so that each names the URL.
enum AssetErrors {
    static func open(_ cause: ErrnoError, path: String, url: String) -> BlobStreamError {
        switch cause.code {
        case ENOENT, ENOTDIR:
            return BlobStreamError(.notFound, "asset '\(url)': '\(path)' does not exist", cause: cause)
        case EACCES, EPERM:
            return BlobStreamError(
                .permissionDenied, "asset '\(url)': cannot open '\(path)': permission denied", cause: cause)
        default:
            return BlobStreamError(.ioFailed, "asset '\(url)': cannot open '\(path)'", cause: cause)
        }
    }

    static func invalidated(url: String, path: String) -> BlobStreamError {
        BlobStreamError(
            .invalidated,
            "the representation of '\(url)' ('\(path)') was invalidated by a change of its library: look it up again")
    }
}
