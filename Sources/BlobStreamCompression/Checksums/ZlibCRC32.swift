import CBlobStreamIsal
import CBlobStreamZlib

/// The CRC-32 of gzip, zip and PNG (the IEEE 802.3 polynomial, reflected): the codecs' own,
/// for the bytes they decode (gzip trailers and index chunks, archive members and sampled
/// identities) and `blobstream checksum -a crc32`. ISA-L's `crc32_gzip_refl` when ISA-L is
/// loaded (carry-less multiplies), else zlib's `crc32`; `CRC32` of BlobStreamChecksums (in
/// Swift, for modules that link no C library, such as S3's checksums) gives the same values.
///
/// ```swift
/// var crc: UInt32 = 0
/// crc = ZlibCRC32.update(crc, bytes)  // then more bytes, in order
/// ```
package enum ZlibCRC32 {
    /// True when ISA-L's CRC-32 (`crc32_gzip_refl`, the same values) was loaded: it folds
    /// with carry-less multiplies, several times as fast as zlib's on a core that has them.
    private static let isalCRC = bs_isal_raw_available() != 0

    /// The CRC-32 of `bytes` continued from `crc` (0 to start): ISA-L's when it is loaded,
    /// else zlib's.
    package static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        if isalCRC { return bs_isal_crc32(crc, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count)) }
        return UInt32(
            truncatingIfNeeded: crc32_z(UInt(crc), base.assumingMemoryBound(to: Bytef.self), bytes.count))
    }

    /// The CRC-32 of `bytes` continued from `crc` (0 to start).
    package static func update(_ crc: UInt32, _ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { update(crc, $0) }
    }

    /// The CRC-32 of A followed by B, from A's, B's and B's length.
    package static func combine(_ a: UInt32, _ b: UInt32, _ lengthB: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: crc32_combine(UInt(a), UInt(b), off_t(lengthB)))
    }
}
