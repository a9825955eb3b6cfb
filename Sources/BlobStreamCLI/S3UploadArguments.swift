import ArgumentParser
import Foundation

/// The options of `blobstream upload SOURCE --to s3://bucket/key`.
package struct S3UploadArguments: ParsableArguments {
    @Option(
        help:
            "The S3 endpoint (as awscli's --endpoint-url; default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's, AWS)."
    )
    package var endpointURL: String?

    @Option(help: "The region to sign for (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1).")
    package var region: String?

    @Option(help: "The credentials profile (default: AWS_PROFILE, then default).")
    package var profile: String?

    @Option(
        help:
            "The size of each part: bytes, or with KiB, MiB, GiB (5MiB to 5GiB; raised for at most 10,000 parts; from a pipe, each part is held in memory: at most 4GiB less 65 bytes)."
    )
    package var partSize: String = S3UploadArguments.defaultPartSize

    @Option(help: "How many parts are sent at once.")
    package var parallel: Int = 4

    @Flag(help: "Continue the newest unfinished upload of the key: send only the parts not already stored.")
    package var resume = false

    @Option(help: "Continue this unfinished upload (implies --resume).")
    package var uploadId: String?

    @Flag(help: "On failure or interruption, keep the parts stored so far (for --resume) instead of aborting.")
    package var keepParts = false

    @Flag(
        help:
            "Abort the unfinished upload --upload-id ID of --to (give no SOURCE): the store drops its parts. For an upload a failure left open; exit 1 when the store does not know the id."
    )
    package var abort = false

    @Option(help: "The object's Content-Type.")
    package var contentType: String?

    @Option(help: "User metadata, KEY=VALUE (repeatable), stored as x-amz-meta-KEY.")
    package var metadata: [String] = []

    @Option(
        help:
            "The S3 checksum stored beside the object: CRC32, CRC32C, SHA1, SHA256 or CRC64NVME (as awscli's; without it, the full-object CRC64NVME when the store keeps S3 checksums; the upload prints the object's CRC64NVME in any case, unless AWS_REQUEST_CHECKSUM_CALCULATION=when_required)."
    )
    package var checksumAlgorithm: String?

    @Option(
        help:
            "The one check of each request's body that the store verifies: auto (the cheapest), payload-sha256, content-md5, or checksum (UNSIGNED-PAYLOAD with the --checksum-algorithm value: only for stores that verify it)."
    )
    package var bodyCheck: String = "auto"

    @Option(help: "The object's Cache-Control.")
    package var cacheControl: String?

    @Option(help: "The object's Content-Disposition.")
    package var contentDisposition: String?

    @Option(help: "The object's Content-Encoding (the bytes are sent as they are).")
    package var contentEncoding: String?

    @Option(help: "The object's storage class: STANDARD, STANDARD_IA, GLACIER, … (as the store offers them).")
    package var storageClass: String?

    @Option(help: "Server-side encryption: AES256 or aws:kms.")
    package var sse: String?

    @Option(help: "The object's tags, URL-encoded: KEY=VALUE&KEY2=VALUE2.")
    package var tagging: String?

    package init() {}

    /// The values `--checksum-algorithm` takes.
    package static let checksumAlgorithms = ["CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"]
    /// The values `--body-check` takes.
    package static let bodyChecks = ["auto", "payload-sha256", "content-md5", "checksum"]

    /// The object settings given, as `--option value` pairs (for messages).
    private var objectSettings: [(String, String?)] {
        [
            ("--content-type", contentType), ("--cache-control", cacheControl),
            ("--content-disposition", contentDisposition), ("--content-encoding", contentEncoding),
            ("--storage-class", storageClass), ("--sse", sse), ("--tagging", tagging),
            ("--checksum-algorithm", checksumAlgorithm),
        ]
    }

    /// `--part-size` when not given.
    package static let defaultPartSize = "8MiB"

    /// The part size in bytes.
    package var partSizeBytes: Int { Self.size(partSize) ?? 0 }

    /// The metadata as pairs.
    package var metadataPairs: [(String, String)] {
        metadata.map { item in
            let equals = item.firstIndex(of: "=")!
            return (String(item[..<equals]), String(item[item.index(after: equals)...]))
        }
    }

    /// Checks the values (a usage error names the option).
    package func check(destination: String) throws {
        let path = destination.dropFirst("s3://".count)
        guard let slash = path.firstIndex(of: "/"), slash != path.startIndex, path.index(after: slash) != path.endIndex
        else {
            throw UsageError(description: "--to \(destination): an S3 destination is s3://bucket/key")
        }
        guard let size = Self.size(partSize), size >= 5 << 20, size <= 5 << 30 else {
            throw UsageError(
                description:
                    "--part-size must be 5MiB to 5GiB, S3's smallest and largest part (a number of bytes, or with KiB, MiB or GiB), not \(partSize)"
            )
        }
        if abort {
            let extra =
                [("--resume", resume), ("--keep-parts", keepParts)].filter { $0.1 }.map(\.0)
                + objectSettings.filter { $0.1 != nil }.map(\.0) + (metadata.isEmpty ? [] : ["--metadata"])
            if let first = extra.first {
                throw UsageError(description: "--abort ends an unfinished upload: \(first) does not apply")
            }
        }
        if let checksumAlgorithm, !Self.checksumAlgorithms.contains(checksumAlgorithm.uppercased()) {
            throw UsageError(
                description:
                    "--checksum-algorithm must be \(Self.checksumAlgorithms.joined(separator: ", ")), not \(checksumAlgorithm)"
            )
        }
        guard Self.bodyChecks.contains(bodyCheck) else {
            throw UsageError(
                description: "--body-check must be \(Self.bodyChecks.joined(separator: ", ")), not \(bodyCheck)")
        }
        if bodyCheck == "checksum" && checksumAlgorithm == nil {
            throw UsageError(description: "--body-check checksum needs --checksum-algorithm")
        }
        guard (1...64).contains(parallel) else {
            throw UsageError(description: "--parallel must be 1 to 64, not \(parallel)")
        }
        for item in metadata {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                throw UsageError(description: "--metadata takes KEY=VALUE, not \(item)")
            }
        }
    }

    /// Fails when an S3 option is given without an s3:// destination.
    package func checkUnused() throws {
        let given =
            endpointURL != nil || region != nil || profile != nil || partSize != Self.defaultPartSize || parallel != 4
            || resume
            || uploadId != nil || keepParts || abort || !metadata.isEmpty || bodyCheck != "auto"
            || objectSettings.contains { $0.1 != nil }
        if given { throw UsageError(description: "the S3 options need --to s3://bucket/key") }
    }

    /// `8MiB`, `5242880`, `1GiB`, `512KiB` (also `M`, `MB`, … read as binary units) in bytes.
    package static func size(_ text: String) -> Int? {
        let digits = text.prefix { $0.isNumber }
        guard let number = Int(digits) else { return nil }
        let unit = text.dropFirst(digits.count).lowercased()
        let shift: Int
        switch unit {
        case "", "b": shift = 0
        case "k", "kb", "kib": shift = 10
        case "m", "mb", "mib": shift = 20
        case "g", "gb", "gib": shift = 30
        default: return nil
        }
        guard number <= Int.max >> shift else { return nil }
        return number << shift
    }
}
