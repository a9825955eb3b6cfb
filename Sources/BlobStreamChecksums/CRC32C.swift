/// CRC-32C (Castagnoli: iSCSI, ext4, S3's `x-amz-checksum-crc32c`), the one place the package
/// computes it: `blobstream checksum -a crc32c` and S3 uploads use this. Catalogue check
/// value: "123456789" → `e3069283`.
///
/// ```swift
/// var crc: UInt32 = 0
/// crc = CRC32C.update(crc, bytes)  // then more bytes, in order
/// ```
package enum CRC32C {
    private static let engine = ReflectedCRC<UInt32>(polynomial: 0x82F6_3B78)

    /// The CRC-32C of `bytes` continued from `crc` (0 to start).
    package static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        engine.update(crc, bytes)
    }

    /// The CRC-32C of `bytes` continued from `crc` (0 to start).
    package static func update(_ crc: UInt32, _ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { update(crc, $0) }
    }

    /// The CRC-32C of A followed by B, from A's, B's and B's length.
    package static func combine(_ a: UInt32, _ b: UInt32, _ lengthB: Int) -> UInt32 {
        engine.combine(a, b, lengthB)
    }
}
