import ArgumentParser
import BlobStreamCLI

/// `blobstream index FILE`: writes the seek-point index of a gzip file, or the member index of
/// an uncompressed tar or a zip.
struct IndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract:
            "Index a gzip file (FILE.gz.gzidx: seek points) or a tar or zip archive (ARCHIVE.blobidx: members).",
        discussion: """
            A gzip file (told by its first bytes) gets a seek-point index: indexed_gzip's GZIDX format \
            (indexed_gzip and rapidgzip read it) followed by BlobStream's record: the file's size, \
            modification time and samples of its bytes, and a CRC-32 per chunk. cat and checksum --offset \
            then use FILE.gz.gzidx beside a gzip: source when it matches the file (or the index given with \
            --index). An uncompressed tar or a zip gets a member index (ARCHIVE.blobidx: each member's \
            position and CRC-32, and the archive's identity); cat and ls use it when it matches. An index \
            that does not match its file is never used.
            """)

    @Option(name: .long, help: "Where to write the index (default: FILE.gz.gzidx beside the file).")
    var output: String?

    @Option(name: .long, help: "The least uncompressed distance between seek points, in bytes (default 4 MiB).")
    var spacing: Int = 4 * 1024 * 1024

    @Argument(help: "The gzip file (a path, file:///… or gzip:file:///…), or a tar or zip archive (a path).")
    var file: String

    func validate() throws {
        if spacing < 1 { throw ValidationError("--spacing must be positive, not \(spacing)") }
    }

    func run() throws {
        let written =
            try isGzipFile(file)
            ? writeGzipIndex(of: file, to: output, spacing: spacing)
            : writeArchiveIndex(path: file, output: output)
        try Array((written + "\n").utf8).withUnsafeBytes { try Console.writeOut($0) }
    }
}
