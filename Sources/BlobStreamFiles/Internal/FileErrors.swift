import BlobStream
import Glibc

/// The errors of the file sources, built in one place so that every message names the file
/// (`name` is already quoted: `'/data/a.jpg'` or `fd 5 ('pipe:[123]')`) and carries the errno.
enum FileErrors {
    /// `open(2)` failed.
    static func open(_ cause: ErrnoError, _ name: String) -> BlobStreamError {
        switch cause.code {
        case ENOENT:
            return BlobStreamError(.notFound, "cannot open \(name): no such file", cause: cause)
        case ENOTDIR:
            return BlobStreamError(
                .notFound, "cannot open \(name): a component of the path is not a directory", cause: cause)
        case EACCES, EPERM:
            return BlobStreamError(.permissionDenied, "cannot open \(name): permission denied", cause: cause)
        case ELOOP:
            return BlobStreamError(.unsupported, "cannot open \(name): too many levels of symbolic links", cause: cause)
        case ENAMETOOLONG:
            return BlobStreamError(.notFound, "cannot open \(name): the path is too long", cause: cause)
        default:
            return BlobStreamError(.ioFailed, "cannot open \(name)", cause: cause)
        }
    }

    /// `fstat(2)` or `fcntl(2)` failed on an open descriptor.
    static func inspect(_ cause: ErrnoError, _ name: String) -> BlobStreamError {
        BlobStreamError(.ioFailed, "cannot inspect \(name)", cause: cause)
    }

    /// The descriptor is of a kind the source does not read.
    static func unsupported(_ kind: FileKind, _ name: String, hint: String) -> BlobStreamError {
        BlobStreamError(.unsupported, "cannot read \(name): it is \(kind)\(hint)")
    }

    /// `pread(2)` or `read(2)` failed.
    static func read(_ cause: ErrnoError, _ name: String, offset: Int64) -> BlobStreamError {
        BlobStreamError(.ioFailed, "cannot read \(name) at offset \(offset)", cause: cause)
    }

    /// The file ended before the length `fstat` gave at open.
    static func shrank(_ name: String, offset: Int64, length: Int64) -> BlobStreamError {
        BlobStreamError(
            .changed,
            "\(name) changed while being read: it ends at offset \(offset), but was \(length) bytes long when opened")
    }

    /// An offset set before open lies past the end of the file.
    static func pastEnd(_ name: String, offset: Int64, length: Int64) -> BlobStreamError {
        BlobStreamError(.invalidOffset, "offset \(offset) is past the end of \(name) (\(length) bytes)")
    }

    /// A stream (pipe, FIFO, socket) ended before the offset read-and-discard was heading to.
    static func streamEndedBefore(_ name: String, offset: Int64, end: Int64) -> BlobStreamError {
        BlobStreamError(.invalidOffset, "offset \(offset) is past the end of \(name), which ended after \(end) bytes")
    }

    /// A read after `close()`.
    static func closed(_ name: String) -> BlobStreamError {
        BlobStreamError(.closed, "\(name) was closed")
    }

    static func interrupted(_ name: String, offset: Int64) -> BlobStreamError {
        BlobStreamError(.closed, "\(name) was closed while a read waited for bytes at offset \(offset)")
    }

    /// A read before `open()`.
    static func notOpen(_ name: String) -> BlobStreamError {
        BlobStreamError(.notOpen, "\(name) is not open")
    }
}
