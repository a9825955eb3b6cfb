/// CRC-64/NVME (the NVM Express polynomial; S3's `x-amz-checksum-crc64nvme` and the checksum
/// S3 adds to objects uploaded without one), the one place the package computes it:
/// `blobstream checksum -a crc64nvme` and S3 uploads use this. Catalogue check value:
/// "123456789" → `ae8b14860a799888`.
package enum CRC64NVME: ReflectedCRCFunction {
    package static let engine = ReflectedCRC<UInt64>(polynomial: 0x9A6C_9329_AC4B_C9B5)
}
