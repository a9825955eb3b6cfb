import BlobStream
import BlobStreamSystem

/// The errors of the module, built in one place so that each names the URL.
enum AssetErrors {
    /// A system call on the file of `url` at `path` failed: `"asset '<url>': open '<path>':
    /// No such file or directory (errno 2)"`, with the code of the errno (`.notFound`,
    /// `.permissionDenied`, …) unless `code` is given.
    static func system(
        _ failure: SystemCallFailure, path: String, url: String, offset: Int64? = nil,
        code: BlobStreamError.Code? = nil
    ) -> BlobStreamError {
        failure.error("'\(path)'", offset: offset, context: "asset '\(url)'", code: code)
    }

    /// An error from the library or a representation, named by the URL when it does not say
    /// it already (never wrapped twice): `"<context> '<url>': <message>"`.
    static func naming(_ error: any Error, url: String, context: String) -> BlobStreamError {
        if let e = error as? BlobStreamError {
            return e.message.contains(url)
                ? e : BlobStreamError(e.code, "\(context) '\(url)': \(e.message)", cause: e.cause)
        }
        return BlobStreamError(.sourceFailed, "\(context) '\(url)'", cause: error)
    }

    /// The asset is not the version being read any more: `"'<url>' changed while being read:
    /// <what> (at offset P of S bytes)"`.
    static func changed(
        url: String, _ what: String, position: Int64, size: Int64, cause: (any Error)? = nil
    ) -> BlobStreamError {
        BlobStreamError(
            .changed, "'\(url)' changed while being read: \(what) (at offset \(position) of \(size) bytes)",
            cause: cause)
    }

    /// `getBytes` gave nothing before the size announced at open.
    static func endedEarly(url: String, offset: Int64, size: Int64) -> BlobStreamError {
        BlobStreamError(
            .changed,
            "'\(url)' changed while being read: its bytes end at offset \(offset), but it was \(size) bytes long when opened"
        )
    }

    /// An offset set before open lies past the end of the asset.
    static func pastEnd(url: String, offset: Int64, size: Int64) -> BlobStreamError {
        BlobStreamError(.invalidOffset, "offset \(offset) is past the end of '\(url)' (\(size) bytes)")
    }

    /// The library kept changing faster than the source could look the asset up again.
    static func keptInvalidating(url: String, attempts: Int, offset: Int64) -> BlobStreamError {
        BlobStreamError(
            .invalidated,
            "'\(url)' kept being invalidated by changes of its library: \(attempts) lookups in a row were invalid before a block could be read (at offset \(offset))"
        )
    }

    /// A read after `close()`.
    static func closed(url: String) -> BlobStreamError {
        BlobStreamError(.closed, "'\(url)' was closed")
    }

    /// A read before `open()`.
    static func notOpen(url: String) -> BlobStreamError {
        BlobStreamError(.notOpen, "'\(url)' is not open")
    }

    /// A read before the open's lookup answered.
    static func stillLookingUp(url: String) -> BlobStreamError {
        BlobStreamError(
            .notOpen, "'\(url)' is still being looked up: wait for isOpenCompleted and hasBytesAvailable before reading"
        )
    }

    /// A read while the asset is looked up again after an invalidation.
    static func lookingUpAgain(url: String) -> BlobStreamError {
        BlobStreamError(
            .notOpen,
            "'\(url)' is being looked up again after its library changed: wait for hasBytesAvailable before reading")
    }

    /// A read in a phase that cannot read (after a failure).
    static func cannotRead(url: String) -> BlobStreamError {
        BlobStreamError(.sourceFailed, "'\(url)' cannot be read")
    }

    /// A representation found invalid by `getBytes` or `checkValid()`.
    static func invalidated(url: String, path: String) -> BlobStreamError {
        BlobStreamError(
            .invalidated,
            "the representation of '\(url)' ('\(path)') was invalidated by a change of its library: look it up again")
    }
}
