import ArgumentParser
import BlobStreamCLI

/// `blobstream index FILE.gz`: writes the seek-point index of a gzip file.
struct IndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract: "Build the seek-point index of a gzip file and write it (FILE.gz.gzidx beside it by default).",
        discussion: """
            The index is indexed_gzip's GZIDX format (indexed_gzip and rapidgzip read it) followed by \
            BlobStream's record: the file's size, modification time and samples of its bytes, and a CRC-32 \
            per chunk. cat and checksum --offset then use FILE.gz.gzidx beside a gzip: source when it \
            matches the file (or the index given with --index); one that does not match is never used.
            """)

    @Option(name: .long, help: "Where to write the index (default: FILE.gz.gzidx beside the file).")
    var output: String?

    @Option(name: .long, help: "The least uncompressed distance between seek points, in bytes (default 4 MiB).")
    var spacing: Int = 4 * 1024 * 1024

    @Argument(help: "The gzip file (a path, file:///… or gzip:file:///…).")
    var file: String

    func validate() throws {
        if spacing < 1 { throw ValidationError("--spacing must be positive, not \(spacing)") }
    }

    func run() throws {
        let written = try writeGzipIndex(of: file, to: output, spacing: spacing)
        try Array((written + "\n").utf8).withUnsafeBytes { try Console.writeOut($0) }
    }
}
