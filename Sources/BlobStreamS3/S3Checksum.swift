import BlobStreamChecksums
import Crypto
import Foundation

/// The checksums S3 stores beside an object (`x-amz-checksum-ALGORITHM`, awscli's
/// `--checksum-algorithm`): the value is the big-endian digest, base64-encoded.
public enum S3ChecksumAlgorithm: String, Sendable, CaseIterable, Hashable {
    /// CRC-32 (IEEE 802.3, as zlib's; BlobStreamChecksums', in Swift).
    case crc32 = "CRC32"
    /// CRC-32C (Castagnoli).
    case crc32c = "CRC32C"
    /// CRC-64/NVME: always a full-object checksum, also of a multipart upload.
    case crc64nvme = "CRC64NVME"
    /// SHA-1.
    case sha1 = "SHA1"
    /// SHA-256.
    case sha256 = "SHA256"

    /// The header a request carries the checksum in: `x-amz-checksum-crc64nvme`.
    public var headerName: String { "x-amz-checksum-\(rawValue.lowercased())" }

    /// The element CompleteMultipartUpload and ListParts name it with: `ChecksumCRC64NVME`.
    public var elementName: String { "Checksum\(rawValue)" }

    /// True for the CRCs, whose part checksums combine into the whole object's
    /// (`S3ChecksumType.fullObject`); SHA-1 and SHA-256 are composite only.
    public var combinesParts: Bool { self == .crc32 || self == .crc32c || self == .crc64nvme }

    /// The type S3 uses for a multipart upload when none is asked for: full object for
    /// CRC-64/NVME, composite for the others.
    public var defaultType: S3ChecksumType { self == .crc64nvme ? .fullObject : .composite }

    /// Reads `CRC32`, `crc32c`, `CRC64NVME`, … in any case.
    public init?(name: String) {
        guard let algorithm = Self(rawValue: name.uppercased()) else { return nil }
        self = algorithm
    }
}

/// How a multipart upload's checksum covers the object (`x-amz-checksum-type`).
public enum S3ChecksumType: String, Sendable, Hashable {
    /// The checksum of the part checksums, with `-N` for N parts (S3's `COMPOSITE`).
    case composite = "COMPOSITE"
    /// The checksum of the whole object's bytes, as if sent in one request (`FULL_OBJECT`;
    /// the CRCs only).
    case fullObject = "FULL_OBJECT"
}

/// A checksum being computed: `update` with the bytes in order, then `digest` or `base64`.
///
/// ```swift
/// var checksum = S3Checksum(.crc64nvme)
/// checksum.update(bytes)
/// print(checksum.base64)  // as S3 shows it
/// ```
public struct S3Checksum: Sendable {
    /// The algorithm.
    public let algorithm: S3ChecksumAlgorithm
    private var state: State
    /// How many bytes were given.
    public private(set) var count: Int64 = 0

    // Unchecked: swift-crypto's hash functions are value types not marked Sendable; their
    // state is copied on write, and a `State` moves between tasks whole, never shared mutable.
    private enum State: @unchecked Sendable {
        case crc32(UInt32)
        case crc32c(UInt32)
        case crc64(UInt64)
        case sha1(Insecure.SHA1)
        case sha256(SHA256)
    }

    /// A checksum of no bytes yet.
    public init(_ algorithm: S3ChecksumAlgorithm) {
        self.algorithm = algorithm
        switch algorithm {
        case .crc32: state = .crc32(0)
        case .crc32c: state = .crc32c(0)
        case .crc64nvme: state = .crc64(0)
        case .sha1: state = .sha1(Insecure.SHA1())
        case .sha256: state = .sha256(SHA256())
        }
    }

    /// Adds `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        count += Int64(bytes.count)
        switch state {
        case .crc32(let crc): state = .crc32(CRC32.update(crc, bytes))
        case .crc32c(let crc): state = .crc32c(CRC32C.update(crc, bytes))
        case .crc64(let crc): state = .crc64(CRC64NVME.update(crc, bytes))
        case .sha1(var hasher):
            hasher.update(bufferPointer: bytes)
            state = .sha1(hasher)
        case .sha256(var hasher):
            hasher.update(bufferPointer: bytes)
            state = .sha256(hasher)
        }
    }

    /// Adds `bytes`.
    public mutating func update<D: DataProtocol>(_ bytes: D) {
        for region in bytes.regions { region.withUnsafeBytes { update($0) } }
    }

    /// The digest: the CRC big-endian, or the hash's bytes.
    public var digest: [UInt8] {
        switch state {
        case .crc32(let crc), .crc32c(let crc): Self.bigEndian(UInt64(crc), bytes: 4)
        case .crc64(let crc): Self.bigEndian(crc, bytes: 8)
        case .sha1(let hasher): Array(hasher.finalize())
        case .sha256(let hasher): Array(hasher.finalize())
        }
    }

    /// The digest in base64, as S3 takes and shows it.
    public var base64: String { Data(digest).base64EncodedString() }

    /// The digest in lowercase hex.
    public var hex: String { SigV4Signer.hex(digest) }

    /// The whole object's checksum from its parts' checksums, in order: for
    /// `.fullObject` (CRCs only) the CRC of all the bytes, combined from the parts'; for
    /// `.composite` the checksum of the parts' digests one after another, then `-N`.
    /// Nil for an empty list, or `.fullObject` with SHA-1 or SHA-256.
    public static func object(_ parts: [S3Checksum], type: S3ChecksumType) -> String? {
        guard let first = parts.first else { return nil }
        switch type {
        case .composite:
            var whole = S3Checksum(first.algorithm)
            for part in parts { whole.update(part.digest) }
            return whole.base64 + "-\(parts.count)"
        case .fullObject:
            return combined(parts)?.base64
        }
    }

    /// The CRC of all the bytes of `parts`, in order, from theirs (`CRC32.combine`: no byte
    /// read again): nil for an empty list, SHA-1 or SHA-256, or parts of several algorithms.
    static func combined(_ parts: [S3Checksum]) -> S3Checksum? {
        guard let first = parts.first, first.algorithm.combinesParts else { return nil }
        var whole = first
        for part in parts.dropFirst() {
            guard part.algorithm == first.algorithm else { return nil }
            switch (whole.state, part.state) {
            case (.crc32(let a), .crc32(let b)): whole.state = .crc32(CRC32.combine(a, b, Int(part.count)))
            case (.crc32c(let a), .crc32c(let b)): whole.state = .crc32c(CRC32C.combine(a, b, Int(part.count)))
            case (.crc64(let a), .crc64(let b)): whole.state = .crc64(CRC64NVME.combine(a, b, Int(part.count)))
            default: return nil
            }
            whole.count += part.count
        }
        return whole
    }

    private static func bigEndian(_ value: UInt64, bytes: Int) -> [UInt8] {
        (0..<bytes).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}
