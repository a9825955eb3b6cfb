import CBlobStreamZlib

/// The CRC-32 of gzip, zip and PNG (zlib's `crc32`, the IEEE 802.3 polynomial, reflected),
/// the one place the package computes it: the gzip trailers and index chunks, the archive
/// members and sampled identities, and `blobstream checksum -a crc32` all use this.
///
/// ```swift
/// var crc: UInt32 = 0
/// crc = CRC32.update(crc, bytes)  // then more bytes, in order
/// ```
package enum CRC32 {
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
