/// CRC-32 (the IEEE 802.3 polynomial, reflected: gzip, zip, PNG, S3's `x-amz-checksum-crc32`)
/// in Swift, for modules that link no C library: S3's checksums use this. The codecs use
/// zlib's (`ZlibCRC32` of BlobStreamCompression), about 1.6 times as fast; both give the same
/// values. Catalogue check value: "123456789" → `cbf43926`.
///
/// ```swift
/// var crc: UInt32 = 0
/// crc = CRC32.update(crc, bytes)  // then more bytes, in order
/// ```
package enum CRC32 {
    private static let engine = ReflectedCRC<UInt32>(polynomial: 0xEDB8_8320)

    /// The CRC-32 of `bytes` continued from `crc` (0 to start).
    package static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        engine.update(crc, bytes)
    }

    /// The CRC-32 of `bytes` continued from `crc` (0 to start).
    package static func update(_ crc: UInt32, _ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { update(crc, $0) }
    }

    /// The CRC-32 of A followed by B, from A's, B's and B's length.
    package static func combine(_ a: UInt32, _ b: UInt32, _ lengthB: Int) -> UInt32 {
        engine.combine(a, b, lengthB)
    }
}
