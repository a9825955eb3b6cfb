import BlobStream
import Foundation

/// The checks an upload's requests carry, resolved from the options and what the store
/// said: the one body check, and the S3 checksum sent beside it (if any).
struct UploadChecks: Sendable {
    /// The body check (never `.automatic`).
    var body: S3BodyCheck
    /// The checksum every request carries, nil for none.
    var checksum: S3ChecksumAlgorithm?
    /// How a multipart upload's checksum covers the object.
    var type: S3ChecksumType
    /// True when the store said it keeps the checksum.
    var stored: Bool
    /// The `FULL_OBJECT` CRC a copy's source keeps, which the parts' CRCs, combined, must
    /// give before the upload completes; nil when there is none to check against.
    var source: SourceChecksum? = nil
    /// Why a copy's source read from a server is not checked (`unchecked: …`), when there is
    /// no `source` to check against; nil for another source (a file).
    var sourceUnchecked: String? = nil

    /// What to compute over a part: its check, its checksum, its CRC-64/NVME (every upload
    /// reports the object's), the source's CRC, and its MD5 when it is to be compared with a
    /// part already stored (`comparing`).
    func plan(comparing: Bool) -> DigestPlan {
        DigestPlan(
            sha256: body == .payloadSHA256, md5: body == .contentMD5 || comparing, checksum: checksum, crc64nvme: true,
            sourceCRC: source?.algorithm)
    }
}

extension S3UploadOptions {
    /// The header fields of the object: type, metadata, and those of `cacheControl` to `tagging`.
    var objectHeaders: [(name: String, value: String)] {
        var headers = S3Client.objectHeaders(contentType: contentType, metadata: metadata)
        for (name, value) in objectSettings { headers.append((name: name, value: value)) }
        return headers
    }

    /// The settings besides type and metadata that are header fields of the object.
    private var objectSettings: [(String, String)] {
        [
            ("Cache-Control", cacheControl), ("Content-Disposition", contentDisposition),
            ("Content-Encoding", contentEncoding), ("x-amz-storage-class", storageClass),
            ("x-amz-server-side-encryption", serverSideEncryption), ("x-amz-tagging", tagging),
        ].compactMap { name, value in value.map { (name, $0) } }
    }

    /// The checksum asked for, or sent anyway (`.whenSupported`: the full-object CRC-64/NVME,
    /// which every upload computes, and which S3 keeps for an object sent with none).
    var checksumToAsk: S3ChecksumAlgorithm? {
        checksumAlgorithm ?? (checksumCalculation == .whenSupported ? .crc64nvme : nil)
    }

    /// `error` from PutObject or CreateMultipartUpload, its message naming the setting the
    /// store refused (storage class, encryption, tagging) when it is about one.
    func namingRefusedSetting(_ error: BlobStreamError) -> BlobStreamError {
        guard let status = error.s3Details?.statusCode, (400..<600).contains(status), status != 403 else {
            return error
        }
        let text = error.message.lowercased()
        let refused: (String, String?)? =
            if error.s3ErrorCode == "InvalidStorageClass" || text.contains("storage class") {
                ("the storage class", storageClass)
            } else if text.contains("encryption") {
                ("server-side encryption", serverSideEncryption)
            } else if text.contains("tagging") {
                ("tagging", tagging)
            } else {
                nil
            }
        guard case (let what, let value?)? = refused else { return error }
        var named = error
        named.message = "the store refuses \(what) \(value): \(error.message)"
        return named
    }
}

extension S3MultipartUpload {
    /// The checks of a single PutObject: the checksum asked for (none unasked: the store
    /// cannot say beforehand whether it keeps one), the body check as asked, else the payload
    /// SHA-256.
    func singleChecks() throws -> UploadChecks {
        let checksum = options.checksumAlgorithm
        let body = options.bodyCheck == .automatic ? .payloadSHA256 : options.bodyCheck
        try checkBodyCheck(body, checksum: checksum)
        return UploadChecks(body: body, checksum: checksum, type: .fullObject, stored: false)
    }

    /// The checks of a multipart upload, once the store said whether it keeps the checksum
    /// asked for (`kept`: the algorithm it named, nil for none).
    func multipartChecks(kept: String?) throws -> UploadChecks {
        let asked = options.checksumToAsk
        let stored = asked != nil && kept?.uppercased() == asked?.rawValue
        if let explicit = options.checksumAlgorithm, !stored {
            throw BlobStreamError.s3(
                .checksumNotSupported,
                "the store keeps no S3 checksums (it did not take x-amz-checksum-algorithm \(explicit.rawValue) for the multipart upload of \(location)): upload without a checksum algorithm"
            )
        }
        let checksum = stored ? asked : nil
        let https = S3Client.endpointURL(client.configuration).scheme?.lowercased() == "https"
        let body: S3BodyCheck =
            switch options.bodyCheck {
            case .automatic: https && checksum != nil ? .checksum : .payloadSHA256
            case let chosen: chosen
            }
        try checkBodyCheck(body, checksum: checksum)
        let type = options.checksumType ?? checksum?.defaultType ?? .composite
        return UploadChecks(body: body, checksum: checksum, type: type, stored: stored)
    }

    /// The `.checksum` body check needs a checksum the store keeps; a full-object type, a CRC.
    private func checkBodyCheck(_ body: S3BodyCheck, checksum: S3ChecksumAlgorithm?) throws {
        if body == .checksum && checksum == nil {
            throw BlobStreamError.s3(
                .checksumNotSupported,
                "the checksum body check needs a checksum the store keeps, and \(location)'s upload has none: choose another body check"
            )
        }
        if options.checksumType == .fullObject, let algorithm = options.checksumAlgorithm, !algorithm.combinesParts {
            throw BlobStreamError.s3(
                .invalidConfiguration,
                "a full-object checksum is a CRC (CRC32, CRC32C, CRC64NVME), not \(algorithm.rawValue)")
        }
    }

    /// The checksum of the object the store's answer gives (`stored`; nil: none) is the one
    /// computed here from the bytes sent (`computed`): a store that computed another one
    /// stored other bytes, or misreports them. A composite checksum's `-N` suffix is compared
    /// when both have one.
    func checkStoredChecksum(_ stored: String?, computed: String, algorithm: S3ChecksumAlgorithm) throws {
        guard let stored else { return }
        let same =
            stored == computed || Self.withoutPartCount(stored) == computed
            || stored == Self.withoutPartCount(computed)
        guard !same else { return }
        throw BlobStreamError.s3(
            .corrupt,
            "\(location): the store answered that the object's \(algorithm.rawValue) is \(stored), but the bytes sent from \(sourceName) have \(computed): the store holds other bytes than those sent, or misreports them"
        )
    }

    /// A composite checksum without its `-N` (part count) suffix.
    private static func withoutPartCount(_ checksum: String) -> String {
        guard let dash = checksum.lastIndex(of: "-"), !checksum[checksum.index(after: dash)...].isEmpty,
            checksum[checksum.index(after: dash)...].allSatisfy(\.isNumber)
        else { return checksum }
        return String(checksum[..<dash])
    }

    /// The header fields CreateMultipartUpload carries: the object's, and the checksum asked for.
    /// Without a type, the type S3 gives an object PutObject stored without one,
    /// `binary/octet-stream` (a store may otherwise pick another for a multipart object:
    /// OpenStack Swift guesses one from the key, where its PutObject gives that one).
    var createHeaders: [(name: String, value: String)] {
        var headers = options.objectHeaders
        if options.contentType == nil { headers.append((name: "Content-Type", value: "binary/octet-stream")) }
        if let asked = options.checksumToAsk {
            headers.append((name: "x-amz-checksum-algorithm", value: asked.rawValue))
            let type = options.checksumType ?? asked.defaultType
            if type == .fullObject { headers.append((name: "x-amz-checksum-type", value: type.rawValue)) }
        }
        return headers
    }
}
