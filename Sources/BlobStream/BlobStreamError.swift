import Foundation

/// The error every BlobStream module reports: a code to switch on, a message that names what
/// failed (path, member, URL, offset), and the underlying cause when there is one.
///
/// Codes are open-ended (`Code` is a struct, not an enum), so new codes never break a
/// client's `switch`; match with `if error.code == .truncated`.
public struct BlobStreamError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A short stable name, e.g. `"truncated"`.
        public let name: String
        /// Makes a code; modules define theirs as static constants.
        public init(_ name: String) { self.name = name }
        /// The code's name, as messages and logs print it.
        public var description: String { name }

        /// The data source reported an error; `cause` holds it.
        public static let sourceFailed = Code("sourceFailed")
        /// A synchronous call would have waited for an announcement on the very queue or
        /// thread that must deliver it.
        public static let wouldDeadlock = Code("wouldDeadlock")
        /// The operation needs an open stream or source.
        public static let notOpen = Code("notOpen")
        /// The stream or source was closed while the operation waited.
        public static let closed = Code("closed")
        /// An offset was negative, not an integer, or past the end.
        public static let invalidOffset = Code("invalidOffset")
        /// The source cannot move to an offset at all.
        public static let offsetUnsupported = Code("offsetUnsupported")
        /// A path, member, asset or URL does not exist.
        public static let notFound = Code("notFound")
        /// Permission denied.
        public static let permissionDenied = Code("permissionDenied")
        /// The input is of a kind this source cannot read (a directory, a symlink, …).
        public static let unsupported = Code("unsupported")
        /// An operating-system I/O call failed; `cause` holds the errno.
        public static let ioFailed = Code("ioFailed")
        /// The input ended before its format said it would.
        public static let truncated = Code("truncated")
        /// The input's bytes are not valid for its format (bad checksum, bad header, …).
        public static let corrupt = Code("corrupt")
        /// The input changed while it was read (a file shrank, an asset was replaced).
        public static let changed = Code("changed")
        /// A URL names a scheme no factory is registered for.
        public static let unknownScheme = Code("unknownScheme")
        /// A URL does not follow the grammar.
        public static let malformedURL = Code("malformedURL")
        /// A file is not written where asked, and nothing was: the path holds something that
        /// is not a regular file (a FIFO, a device, a directory, a link to nothing), or it is
        /// one of the inputs, which the file would replace.
        public static let invalidDestination = Code("invalidDestination")
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence naming what failed, e.g. `"cannot open '/data/a.jpg': no such file"`.
    public var message: String
    /// The underlying error (an errno, a zlib or libarchive code, a source's own error).
    public var cause: (any Error)?

    /// Makes an error.
    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// `message`, followed by the cause when the message does not already say it.
    public var description: String {
        guard let cause else { return message }
        let text = String(describing: cause)
        return message.contains(text) ? message : "\(message) (\(text))"
    }
}

extension BlobStreamError: CustomNSError {
    /// `"BlobStream"`.
    public static var errorDomain: String { "BlobStream" }
    /// A stable small integer per code (the hash of its name folded to 16 bits).
    public var errorCode: Int { code.name.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFF } }
    /// The message as the localized description, the cause as `NSUnderlyingErrorKey`.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let cause { info[NSUnderlyingErrorKey] = cause as NSError }
        return info
    }
}

/// An `errno` value as an error, with the name of the call that set it.
public struct ErrnoError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The `errno` value.
    public var code: Int32
    /// Makes one from an `errno` value.
    public init(_ code: Int32) { self.code = code }
    /// `strerror`'s text and the number, e.g. `"No such file or directory (errno 2)"`.
    public var description: String { "\(String(cString: strerror(code))) (errno \(code))" }
}
