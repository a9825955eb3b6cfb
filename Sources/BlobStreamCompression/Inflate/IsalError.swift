/// What ISA-L's inflate (or the gzip header and trailer checks around it) said when it
/// refused the data: an ISA-L return code and a message in zlib's words where one exists.
///
/// The `cause` of the `BlobStreamError`s that `GzipDataSource` reports for corrupt input
/// (`.corrupt`) when it inflates with ISA-L (`InflateEngine.isal`), e.g. code −6
/// (`ISAL_INCORRECT_CHECKSUM`) with `"incorrect data check"` for a bad CRC-32, or −2
/// (`ISAL_INVALID_SYMBOL`) with `"invalid code"` for damaged deflate data.
public struct IsalError: Error, Sendable, Equatable, CustomStringConvertible {
    /// ISA-L's return code (`ISAL_INVALID_BLOCK` = −1, `ISAL_INVALID_SYMBOL` = −2, …).
    public var code: Int32
    /// What was wrong.
    public var message: String

    /// Makes one from a code and a message.
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// The symbolic name of `code` (`"ISAL_INVALID_SYMBOL"`), or the number.
    public var codeName: String {
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

    /// `"isal: incorrect data check (ISAL_INCORRECT_CHECKSUM)"`.
    public var description: String { "isal: \(message) (\(codeName))" }
}
