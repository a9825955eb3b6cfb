import BlobStream
import SystemPackage

/// A system call that failed: which call, and its `errno`.
///
/// Small and allocation-free, so that the read paths can return it in a `Result`; the
/// caller, which knows what the descriptor is, turns it into the `BlobStreamError` the user
/// sees with `error(_:offset:context:)`, once.
package struct SystemCallFailure: Error, Sendable, Equatable {
    /// The call's name, e.g. `"pread"`.
    package var call: StaticString
    /// What the call set `errno` to.
    package var errno: Errno

    /// Makes one.
    package init(_ call: StaticString, _ errno: Errno) {
        self.call = call
        self.errno = errno
    }

    /// Makes one from an `errno` number.
    package init(_ call: StaticString, code: Int32) {
        self.init(call, Errno(rawValue: code))
    }

    /// The `errno` number.
    package var code: Int32 { errno.rawValue }

    /// Whether this is the `ECANCELED` of a wait ended by a `WakeupPipe`.
    package var isCanceled: Bool { errno == .canceled }

    /// Whether the path or a folder on it does not exist (`ENOENT`, `ENOTDIR`).
    package var isNotFound: Bool { errno == .noSuchFileOrDirectory || errno == .notDirectory }

    package static func == (a: Self, b: Self) -> Bool {
        a.errno == b.errno && a.call.description == b.call.description
    }

    /// The `BlobStreamError` code of this `errno`: `.notFound` (no such file, a path through
    /// a non-directory, a name too long), `.permissionDenied`, `.unsupported` (too many
    /// symbolic links), `.closed` (`ECANCELED`: an interrupted wait), `.ioFailed` otherwise.
    package var errorCode: BlobStreamError.Code {
        switch errno {
        case .noSuchFileOrDirectory, .notDirectory, .fileNameTooLong: .notFound
        case .permissionDenied, .notPermitted: .permissionDenied
        case .tooManySymbolicLinkLevels: .unsupported
        case .canceled: .closed
        default: .ioFailed
        }
    }

    /// The cause a `BlobStreamError` carries: the core's `ErrnoError`.
    package var cause: ErrnoError { ErrnoError(errno.rawValue) }

    /// The error the user sees: `"<call> <name>[ at offset N]: <strerror> (errno N)"`, e.g.
    /// `"pread '/data/a.mov' at offset 123: Input/output error (errno 5)"`, optionally
    /// after a `context` (`"asset '…': open '…': …"`); the code from `errno`
    /// (`errorCode`) unless `code` is given; the `ErrnoError` as cause. The message already says the
    /// cause, so `description` does not repeat it.
    ///
    /// - Parameter name: what the call was made on, quoted as the caller shows it
    ///   (`'/data/a.mov'`, `archive '/x.tar'`, `fd 5 ('pipe:[123]')`).
    package func error(
        _ name: String, offset: Int64? = nil, context: String? = nil, code: BlobStreamError.Code? = nil
    ) -> BlobStreamError {
        let at = offset.map { " at offset \($0)" } ?? ""
        let prefix = context.map { "\($0): " } ?? ""
        return BlobStreamError(
            code ?? errorCode, "\(prefix)\(call) \(name)\(at): \(cause)", cause: cause)
    }
}
