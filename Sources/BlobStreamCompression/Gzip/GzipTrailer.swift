/// The 8 bytes that end a gzip member (RFC 1952): the CRC-32 of its uncompressed bytes, then
/// their count modulo 2³² (ISIZE), both little-endian. The one reading of a trailer for every
/// decoder that parses gzip itself (the index walker, the ISA-L index builder, the parallel
/// reader's ISA-L path); zlib and ISA-L's gzip mode check it inside the engine.
struct GzipTrailer: Equatable {
    /// The size of a trailer.
    static let size = 8

    /// The CRC-32 the member's bytes must have.
    var crc32: UInt32
    /// The member's uncompressed size modulo 2³².
    var isize: UInt32

    /// Reads the 8 bytes of a trailer (`bytes` has at least 8, from `start`).
    init<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, at start: Bytes.Index) {
        func word(_ k: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[bytes.index(start, offsetBy: k + $1)]) << (8 * $1) }
        }
        crc32 = word(0)
        isize = word(4)
    }

    /// What this trailer refuses of a member whose bytes have `crc32` and are `length` long:
    /// `"CRC-32"` (checked first, as zlib does), `"ISIZE"`, or nil when both match.
    func mismatch(crc32 actual: UInt32, length: Int64) -> String? {
        if crc32 != actual { return "CRC-32" }
        if isize != UInt32(truncatingIfNeeded: length) { return "ISIZE" }
        return nil
    }
}
