import CBlobStreamZlib

/// The CRC-32 of gzip, zip and PNG by zlib's `crc32` (the IEEE 802.3 polynomial, reflected):
/// the codecs' own, for the bytes they decode (gzip trailers and index chunks, archive
/// members and sampled identities) and `blobstream checksum -a crc32`. zlib's folded loops
/// run about 1.6 times as fast as `CRC32` of BlobStreamChecksums (pure Swift, for modules
/// that link no C library, such as S3's checksums); both give the same values.
///
/// ```swift
/// var crc: UInt32 = 0
/// crc = ZlibCRC32.update(crc, bytes)  // then more bytes, in order
/// ```
package enum ZlibCRC32 {
    /// The CRC-32 of `bytes` continued from `crc` (0 to start).
    package static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
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
