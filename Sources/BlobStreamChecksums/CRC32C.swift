/// CRC-32C (Castagnoli: iSCSI, ext4, S3's `x-amz-checksum-crc32c`), the one place the package
/// computes it: `blobstream checksum -a crc32c` and S3 uploads use this. Catalogue check
/// value: "123456789" → `e3069283`.
///
/// ```swift
/// var crc: UInt32 = 0
/// crc = CRC32C.update(crc, bytes)  // then more bytes, in order
/// ```
package enum CRC32C: ReflectedCRCFunction {
    package static let engine = ReflectedCRC<UInt32>(polynomial: 0x82F6_3B78)
}
