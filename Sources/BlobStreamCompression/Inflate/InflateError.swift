/// What an inflate engine said when it refused the data: its return code and its message. One
/// shape for both engines, named by the engine's `InflateErrorCodes`; use the aliases
/// ``ZlibError`` and ``IsalError``.
///
/// The `cause` of the `BlobStreamError`s the gzip and archive sources report for corrupt input
/// (`.corrupt`). Both engines use zlib's words where one exists: `"incorrect data check"` for
/// a bad CRC-32, `"incorrect length check"` for a bad ISIZE, `"header crc mismatch"` for a bad
/// FHCRC, `"incorrect header check"` for bad magic bytes.
public struct InflateError<Codes: InflateErrorCodes>: Error, Sendable, Equatable, CustomStringConvertible {
    /// The engine's return code (zlib: `Z_DATA_ERROR` = −3, …; ISA-L: `ISAL_INVALID_SYMBOL` =
    /// −2, …).
    public var code: Int32
    /// The engine's message (zlib's `strm.msg`), or a description of the code when it gave none.
    public var message: String

    /// Makes one from a code and a message.
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// The symbolic name of `code` (`"Z_DATA_ERROR"`, `"ISAL_INVALID_SYMBOL"`), or the number.
    public var codeName: String { Codes.name(of: code) }

    /// `"zlib: incorrect data check (Z_DATA_ERROR)"`, `"isal: invalid code (ISAL_INVALID_SYMBOL)"`.
    public var description: String { "\(Codes.engine): \(message) (\(codeName))" }
}

/// An inflate engine's return codes, which name an ``InflateError``.
public protocol InflateErrorCodes: Sendable {
    /// How messages name the engine: `"zlib"`, `"isal"`.
    static var engine: String { get }
    /// The symbolic name of `code`, or the number.
    static func name(of code: Int32) -> String
}

/// What zlib said when it refused the data, e.g. code −3 (`Z_DATA_ERROR`) with `"incorrect
/// data check"` for a bad CRC-32.
public typealias ZlibError = InflateError<ZlibCodes>

/// What ISA-L's inflate (or the gzip header and trailer checks around it) said when it refused
/// the data, e.g. code −6 (`ISAL_INCORRECT_CHECKSUM`) with `"incorrect data check"` for a bad
/// CRC-32, or −2 (`ISAL_INVALID_SYMBOL`) with `"invalid code"` for damaged deflate data.
public typealias IsalError = InflateError<IsalCodes>

/// zlib's return codes.
public enum ZlibCodes: InflateErrorCodes {
    /// `"zlib"`.
    public static let engine = "zlib"

    /// `"Z_DATA_ERROR"` for −3, and so on.
    public static func name(of code: Int32) -> String {
        switch code {
        case 1: "Z_STREAM_END"
        case 2: "Z_NEED_DICT"
        case -1: "Z_ERRNO"
        case -2: "Z_STREAM_ERROR"
        case -3: "Z_DATA_ERROR"
        case -4: "Z_MEM_ERROR"
        case -5: "Z_BUF_ERROR"
        case -6: "Z_VERSION_ERROR"
        default: "zlib code \(code)"
        }
    }
}

/// ISA-L's inflate return codes.
public enum IsalCodes: InflateErrorCodes {
    /// `"isal"`.
    public static let engine = "isal"

    /// `"ISAL_INVALID_SYMBOL"` for −2, and so on.
    public static func name(of code: Int32) -> String {
        switch code {
        case -1: "ISAL_INVALID_BLOCK"
        case -2: "ISAL_INVALID_SYMBOL"
        case -3: "ISAL_INVALID_LOOKBACK"
        case -4: "ISAL_INVALID_WRAPPER"
        case -5: "ISAL_UNSUPPORTED_METHOD"
        case -6: "ISAL_INCORRECT_CHECKSUM"
        case -9: "ISAL_INVALID_OPERATION"
        default: "ISA-L code \(code)"
        }
    }
}
