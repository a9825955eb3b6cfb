/// CRC-64/NVME (the NVM Express polynomial; S3's `x-amz-checksum-crc64nvme` and the checksum
/// S3 adds to objects uploaded without one), the one place the package computes it:
/// `blobstream checksum -a crc64nvme` and S3 uploads use this. Catalogue check value:
/// "123456789" → `ae8b14860a799888`.
package enum CRC64NVME {
    private static let engine = ReflectedCRC<UInt64>(polynomial: 0x9A6C_9329_AC4B_C9B5)

    /// The CRC-64/NVME of `bytes` continued from `crc` (0 to start).
    package static func update(_ crc: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        engine.update(crc, bytes)
    }

    /// The CRC-64/NVME of `bytes` continued from `crc` (0 to start).
    package static func update(_ crc: UInt64, _ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { update(crc, $0) }
    }

    /// The CRC-64/NVME of A followed by B, from A's, B's and B's length.
    package static func combine(_ a: UInt64, _ b: UInt64, _ lengthB: Int) -> UInt64 {
        engine.combine(a, b, lengthB)
    }
}
