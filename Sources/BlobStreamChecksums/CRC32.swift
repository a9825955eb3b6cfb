/// CRC-32 (the IEEE 802.3 polynomial, reflected: gzip, zip, PNG, S3's `x-amz-checksum-crc32`)
/// in Swift, for modules that link no C library: S3's checksums use this. The codecs use
/// zlib's (`ZlibCRC32` of BlobStreamCompression), about 1.6 times as fast; both give the same
/// values. Catalogue check value: "123456789" → `cbf43926`.
///
/// ```swift
/// var crc: UInt32 = 0
/// crc = CRC32.update(crc, bytes)  // then more bytes, in order
/// ```
package enum CRC32: ReflectedCRCFunction {
    package static let engine = ReflectedCRC<UInt32>(polynomial: 0xEDB8_8320)
}
