/// What zlib said when it refused the data: its return code and its message.
///
/// The `cause` of the `BlobStreamError`s that `GzipDataSource` reports for corrupt input
/// (`.corrupt`), e.g. code −3 (`Z_DATA_ERROR`) with `"incorrect data check"` for a bad
/// CRC-32, `"incorrect length check"` for a bad ISIZE, `"header crc mismatch"` for a bad
/// FHCRC, `"incorrect header check"` for bad magic bytes.
public struct ZlibError: Error, Sendable, Equatable, CustomStringConvertible {
    /// zlib's return code (`Z_DATA_ERROR` = −3, `Z_MEM_ERROR` = −4, …).
    public var code: Int32
    /// zlib's message (`strm.msg`), or a description of the code when zlib gave none.
    public var message: String

    /// Makes one from a code and a message.
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// The symbolic name of `code` (`"Z_DATA_ERROR"`), or the number.
    public var codeName: String {
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

    /// `"zlib: incorrect data check (Z_DATA_ERROR)"`.
    public var description: String { "zlib: \(message) (\(codeName))" }
}
