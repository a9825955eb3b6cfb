// The digests `blobstream checksum` computes: SHA-2 and the legacy hashes from swift-crypto,
// CRC-32 from zlib (the compression kit's), CRC-32C and CRC-64/NVME from the checksums
// (which S3 uploads use too).

import ArgumentParser
import BlobStreamChecksums
import BlobStreamCompression
import Crypto
import Foundation

/// `--algorithm`: what `checksum` computes. Each prints as lowercase hex, as the GNU tool of
/// its name does (`sha256sum`, `sha512sum`, `sha1sum`, `md5sum`); `crc32` is zlib's CRC-32
/// (the one gzip and zip store) as 8 lowercase hex digits, as `rhash --crc32 --simple`
/// and Python's `"%08x" % zlib.crc32(data)` print it; `crc32c` (8 digits) and `crc64nvme`
/// (16) are the CRCs S3 stores (`x-amz-checksum-crc32c`, `-crc64nvme`), big-endian, as
/// `crcmod`'s and the catalogue's check values print them.
enum ChecksumAlgorithm: String, CaseIterable, ExpressibleByArgument {
    case sha256, sha512, sha1, md5, crc32, crc32c, crc64nvme

    /// The number of hex digits of a digest (what a `--check` line must hold).
    var hexLength: Int {
        switch self {
        case .sha256: 64
        case .sha512: 128
        case .sha1: 40
        case .md5: 32
        case .crc32, .crc32c: 8
        case .crc64nvme: 16
        }
    }

    /// The name GNU's `--tag` lines (BSD style, `SHA256 (NAME) = HEX`) begin with.
    var tag: String {
        switch self {
        case .sha256: "SHA256"
        case .sha512: "SHA512"
        case .sha1: "SHA1"
        case .md5: "MD5"
        case .crc32: "CRC32"
        case .crc32c: "CRC32C"
        case .crc64nvme: "CRC64NVME"
        }
    }

    /// The GNU tool whose output this algorithm's lines match (for messages and help).
    var referenceTool: String {
        switch self {
        case .crc32: "rhash --crc32 --simple"
        case .crc32c, .crc64nvme: "blobstream checksum -a \(rawValue)"
        default: "\(rawValue)sum"
        }
    }

    /// A fresh digest of no bytes yet.
    func makeHasher() -> ChecksumHasher {
        switch self {
        case .sha256: .sha256(SHA256())
        case .sha512: .sha512(SHA512())
        case .sha1: .sha1(Insecure.SHA1())
        case .md5: .md5(Insecure.MD5())
        case .crc32: .crc32(0)
        case .crc32c: .crc32c(0)
        case .crc64nvme: .crc64nvme(0)
        }
    }
}

/// A digest being computed: `update` with each chunk, then `hex`.
enum ChecksumHasher {
    case sha256(SHA256)
    case sha512(SHA512)
    case sha1(Insecure.SHA1)
    case md5(Insecure.MD5)
    case crc32(UInt32)
    case crc32c(UInt32)
    case crc64nvme(UInt64)

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .sha256(var h):
            h.update(bufferPointer: bytes)
            self = .sha256(h)
        case .sha512(var h):
            h.update(bufferPointer: bytes)
            self = .sha512(h)
        case .sha1(var h):
            h.update(bufferPointer: bytes)
            self = .sha1(h)
        case .md5(var h):
            h.update(bufferPointer: bytes)
            self = .md5(h)
        case .crc32(let crc):
            self = .crc32(ZlibCRC32.update(crc, bytes))
        case .crc32c(let crc):
            self = .crc32c(CRC32C.update(crc, bytes))
        case .crc64nvme(let crc):
            self = .crc64nvme(CRC64NVME.update(crc, bytes))
        }
    }

    /// The digest's bytes: the hash's, or the CRC big-endian.
    func bytes() -> [UInt8] {
        func bigEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
            (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        }
        switch self {
        case .sha256(let h): return Array(h.finalize())
        case .sha512(let h): return Array(h.finalize())
        case .sha1(let h): return Array(h.finalize())
        case .md5(let h): return Array(h.finalize())
        case .crc32(let crc), .crc32c(let crc): return bigEndian(UInt64(crc), 4)
        case .crc64nvme(let crc): return bigEndian(crc, 8)
        }
    }

    /// The digest as lowercase hex.
    func hex() -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes() { out += [digits[Int(b >> 4)], digits[Int(b & 15)]] }
        return String(decoding: out, as: UTF8.self)
    }

    /// The digest in base64, as S3 shows its checksums (`x-amz-checksum-…`).
    func base64() -> String { Data(bytes()).base64EncodedString() }
}
