import ArgumentParser
import BlobStream
import BlobStreamCLI
import Foundation

/// `blobstream checksum SOURCE...`: `<hex>  <name>` lines, byte for byte as `sha256sum`
/// (or `sha512sum`, `sha1sum`, `md5sum`) prints them; `--check LIST...` reads such lines
/// back as `sha256sum -c` does.
struct Checksum: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checksum",
        abstract: "Print or check checksums of SOURCEs, as sha256sum (and sha512sum, sha1sum, md5sum) does.",
        discussion: """
            Lines are '<hex>  <name>'; a name holding a backslash, a newline or a carriage return is \
            escaped (\\\\, \\n, \\r) and its line starts with '\\', as GNU coreutils writes it. crc32 is \
            zlib's CRC-32 (as gzip and zip store it) in 8 lowercase hex digits; crc32c and crc64nvme are the \
            CRCs S3 stores (8 and 16 hex digits). With --base64, the digest is printed in base64, as S3 shows \
            its checksums (x-amz-checksum-crc64nvme, aws s3api head-object --checksum-mode ENABLED).
            With --check, each SOURCE is a list of such lines (as sha256sum writes it, or with --tag); each file it \
            names is read and reported as 'NAME: OK' or 'NAME: FAILED' ('FAILED open or read' when it \
            cannot be read), with a summary on stderr; the status is 1 when any file failed.
            """)

    @OptionGroup var options: SourceOptions
    @OptionGroup(title: "S3 sources (s3://bucket/key)") var s3: S3SourceArguments

    @Option(
        name: [.short, .long], help: "The digest: sha256 (default), sha512, sha1, md5, crc32, crc32c or crc64nvme.")
    var algorithm: ChecksumAlgorithm = .sha256

    @Flag(name: .long, help: "Print the digest in base64, as S3 shows its checksums (not with --check).")
    var base64 = false

    @Flag(name: [.short, .long], help: "Read checksum lists and check the files they name (like sha256sum -c).")
    var check = false

    @Flag(name: .long, help: "With --check: do not print OK for each file that matches.")
    var quiet = false

    @Flag(name: .long, help: "With --check: print nothing; the exit status says whether all matched.")
    var status = false

    @Argument(help: "Sources: URLs, paths, or - for standard input (with --check: checksum lists).")
    var sources: [String] = ["-"]

    func validate() throws {
        if !check && (quiet || status) { throw ValidationError("--quiet and --status go with --check") }
        if check && base64 { throw ValidationError("--check reads hex digests: --base64 does not apply") }
    }

    func run() throws {
        if check { return try runCheck() }
        try options.forEachStream(sources, remote: RunConnections(caBundle: options.caBundle).remote(s3: s3.settings)) {
            source, pumpBytes in
            try Console.print(ChecksumLine(hex: try digest(pumpBytes), name: source).text)
        }
    }

    /// The digest of the bytes `pumpBytes` delivers.
    func digest(_ pumpBytes: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws -> String {
        var hasher = algorithm.makeHasher()
        try pumpBytes { hasher.update($0) }
        return base64 ? hasher.base64() : hasher.hex()
    }
}
