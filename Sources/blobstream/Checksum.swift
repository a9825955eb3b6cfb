import ArgumentParser
import BlobStream
import BlobStreamCLI
import Foundation

/// `blobstream checksum SOURCE...`: `<hex>  <name>` lines, byte for byte as `sha256sum`
/// (or `sha512sum`, `sha1sum`, `md5sum`) prints them; `--check LIST...` reads such lines
/// back as `sha256sum -c` does.
struct Checksum: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print or check checksums of SOURCEs, as sha256sum (and sha512sum, sha1sum, md5sum) does.",
        discussion: """
            Lines are '<hex>  <name>'; a name holding a backslash, a newline or a carriage return is \
            escaped (\\\\, \\n, \\r) and its line starts with '\\', as GNU coreutils writes it. crc32 is \
            zlib's CRC-32 (as gzip and zip store it) in 8 lowercase hex digits.
            With --check, each SOURCE is a list of such lines (as sha256sum writes it, or with --tag); each file it \
            names is read and reported as 'NAME: OK' or 'NAME: FAILED' ('FAILED open or read' when it \
            cannot be read), with a summary on stderr; the status is 1 when any file failed.
            """)

    @OptionGroup var options: SourceOptions
    @OptionGroup(title: "S3 sources (s3://bucket/key)") var s3: S3SourceArguments

    @Option(name: [.short, .long], help: "The digest: sha256 (default), sha512, sha1, md5 or crc32.")
    var algorithm: ChecksumAlgorithm = .sha256

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
    }

    func run() throws {
        if check { return try runCheck() }
        try options.forEachStream(sources, s3: s3.settings) { source, pumpBytes in
            try Console.print(ChecksumLine(hex: try digest(pumpBytes), name: source).text)
        }
    }

    /// The digest of the bytes `pumpBytes` delivers.
    func digest(_ pumpBytes: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws -> String {
        var hasher = algorithm.makeHasher()
        try pumpBytes { hasher.update($0) }
        return hasher.hex()
    }
}
