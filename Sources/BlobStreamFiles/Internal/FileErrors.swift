import BlobStream
import BlobStreamSystem

/// The errors of the file sources, built in one place so that every message names the file
/// (`name` is already quoted: `'/data/a.jpg'` or `fd 5 ('pipe:[123]')`), and those of a system
/// call name the call too and carry the errno as cause (`BlobStreamSystem`).
enum FileErrors {
    /// `open(2)` failed: `"open '/data/a.jpg': No such file or directory (errno 2)"`, with
    /// the code of the errno (`.notFound`, `.permissionDenied`, `.unsupported` for a loop of
    /// symbolic links, `.ioFailed`).
    static func open(_ failure: SystemCallFailure, _ name: String) -> BlobStreamError {
        failure.error(name)
    }

    /// `open(2)` failed with `cause`.
    static func open(_ cause: ErrnoError, _ name: String) -> BlobStreamError {
        open(SystemCallFailure("open", code: cause.code), name)
    }

    /// `fstat(2)` or `fcntl(2)` failed on an open descriptor (`.ioFailed`).
    static func inspect(_ failure: SystemCallFailure, _ name: String) -> BlobStreamError {
        failure.error(name, code: .ioFailed)
    }

    /// The descriptor is of a kind the source does not read.
    static func unsupported(_ kind: FileKind, _ name: String, hint: String) -> BlobStreamError {
        BlobStreamError(.unsupported, "cannot read \(name): it is \(kind)\(hint)")
    }

    /// `pread(2)`, `read(2)` or the `poll(2)` before it failed (`.ioFailed`):
    /// `"pread '/data/a.mov' at offset 123: Input/output error (errno 5)"`.
    static func read(_ failure: SystemCallFailure, _ name: String, offset: Int64) -> BlobStreamError {
        failure.error(name, offset: offset, code: .ioFailed)
    }

    /// An offset set before open lies past the end of the file.
    static func pastEnd(_ name: String, offset: Int64, length: Int64) -> BlobStreamError {
        PositionalReader.pastEnd(name, offset: offset, length: length)
    }

    /// A negative offset handed to `seek(to:)`.
    static func negativeOffset(_ name: String, offset: Int64) -> BlobStreamError {
        BlobStreamError(.invalidOffset, "cannot move \(name) to offset \(offset): an offset is 0 or more")
    }

    /// A move refused because the source was closed (`.closed`) or failed (`.invalidOffset`,
    /// with the failure as cause, not repeated in the message).
    static func cannotMove(_ name: String, offset: Int64, closed: Bool, failure: (any Error)?) -> BlobStreamError {
        closed
            ? BlobStreamError(.closed, "cannot move \(name) to offset \(offset): it was closed")
            : BlobStreamError(
                .invalidOffset, "cannot move \(name) to offset \(offset): reading it failed", cause: failure)
    }

    /// A move on a descriptor the source cannot read at all (a directory, a descriptor
    /// `fstat` failed on): `.offsetUnsupported`, with why as cause.
    static func cannotMove(_ name: String, offset: Int64, unreadable: BlobStreamError) -> BlobStreamError {
        BlobStreamError(
            .offsetUnsupported, "cannot move \(name) to offset \(offset): it cannot be read", cause: unreadable)
    }

    /// A move back on a descriptor read in order (pipe, FIFO, socket, device), before the
    /// bytes already taken from it.
    static func cannotGoBack(_ name: String, offset: Int64, consumed: Int64) -> BlobStreamError {
        BlobStreamError(
            .invalidOffset,
            "cannot move \(name) back to offset \(offset): it is read in order (a pipe, FIFO, socket or device) and \(consumed) bytes were already taken from it"
        )
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
