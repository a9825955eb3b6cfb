import ArgumentParser
import BlobStreamCLI

/// `blobstream index FILE`: writes the seek-point index of a gzip file, or the member index of
/// an uncompressed tar or a zip.
struct IndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract:
            "Index a gzip file (FILE.gz.gzidx: seek points) or a tar, tar.gz, tar.xz or zip archive (ARCHIVE.blobidx: members).",
        discussion: """
            A gzip file (told by its first bytes) gets a seek-point index: indexed_gzip's GZIDX format \
            (indexed_gzip and rapidgzip read it) followed by BlobStream's record: the file's size, \
            modification time and samples of its bytes, and a CRC-32 per chunk. cat and checksum --offset \
            then use FILE.gz.gzidx beside a gzip: source when it matches the file (or the index given with \
            --index). An uncompressed tar or a zip gets a member index (ARCHIVE.blobidx: each member's \
            position and CRC-32, and the archive's identity); cat and ls use it when it matches. A gzip file \
            that holds a tar (ustar magic in its first inflated header; not when named gzip:…) gets both in one \
            pass: ARCHIVE.blobidx holds the members (offsets in the inflated tar, CRC-32s) and embeds the seek \
            points, which also go to ARCHIVE.gzidx; cat then inflates a member from the seek point before it, \
            checking every chunk and the member's CRC-32. An index that does not match its file is never used.
            Only a regular file is indexed. An index is written only to a new path or over a regular file that \
            is not FILE (through any link), through a temporary file in the same folder renamed over it; a \
            FIFO, a device, a directory or FILE itself there is a usage error (status 2).
            """)

    @Option(
        name: .long,
        help:
            "Where to write the index (default: FILE.gz.gzidx or ARCHIVE.blobidx beside the file; a tar.gz's ARCHIVE.gzidx is written only then)."
    )
    var output: String?

    @Option(
        name: .long,
        help: "The least uncompressed distance between seek points (gzip, tar.gz), in bytes (default 4 MiB).")
    var spacing: Int = 4 * 1024 * 1024

    @Option(
        name: .long,
        help:
            "Adopt this foreign GZIDX (indexed_gzip's, rapidgzip's) for the gzip FILE: every seek point is checked against the file (two inflates) and the index is written with BlobStream's record (identity, chunk CRC-32s), so reads through it are checked."
    )
    var from: String?

    @Argument(
        help: "The gzip file (a path, file:///… or gzip:file:///…), or a tar, tar.gz, tar.xz or zip archive (a path).")
    var file: String

    func validate() throws {
        if spacing < 1 { throw ValidationError("--spacing must be positive, not \(spacing)") }
    }

    func run() throws {
        if let from {
            guard try isGzipFile(file) else {
                throw ToolFailure(message: "\(file): --from \(from) adopts a gzip index, and this is not a gzip file")
            }
            let written = try writeGzipIndex(of: file, to: output, spacing: spacing, adopting: from)
            try Array((written + "\n").utf8).withUnsafeBytes { try Console.writeOut($0) }
            return
        }
        let written =
            try isGzipFile(file) && !isTarGzipFile(file)
            ? writeGzipIndex(of: file, to: output, spacing: spacing)
            : writeArchiveIndex(path: file, output: output, spacing: spacing)
        try Array((written + "\n").utf8).withUnsafeBytes { try Console.writeOut($0) }
    }
}
