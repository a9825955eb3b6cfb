import ArgumentParser
import BlobStreamCLI
import BlobStreamSources

/// `blobstream index FILE`: writes the seek-point index of a gzip file, or the member index of
/// an archive (a tar, compressed or not, or a zip).
struct IndexCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract:
            "Index a gzip file (FILE.gz.gzidx: seek points), a zstd file in frames (FILE.zst.zstidx) or a tar, tar.gz, tar.xz, tar.zst or zip archive (ARCHIVE.blobidx: members).",
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
            checking every chunk and the member's CRC-32. A zstd file that holds a tar gets a member index that \
            also records every zstd frame; cat then decodes a member from the frame that holds its header (a \
            file of one frame, as zstd alone writes it, from its start: index says so; compress --seekable \
            makes a copy in frames), checking each frame and the member's CRC-32. A zstd file that holds no tar \
            gets a frame index (FILE.zst.zstidx: each frame's place, sizes and checksum) when it is in many \
            frames without a seek table (pzstd's, pieces concatenated): cat --offset zstd:FILE.zst then enters \
            the frame that holds the offset; a seekable one needs none (its own seek table serves), and one of \
            a single frame cannot have one. An index that does not match its file is never used.
            A gzip object on a store (s3://bucket/key) or a web server (http(s)://, with a strong ETag) is \
            read through ranged GETs and gets a seek-point index recording its size and ETag, written beside it \
            as an object of its own (s3://bucket/key.gzidx; --output names a path or another s3:// URL); \
            cat and checksum gzip:s3://… find it there (one small request) and use it while the object's ETag \
            matches. A tar, tar.gz, tar.zst or zip on a store or a web server gets a member index recording its \
            size and ETag, written beside it (s3://bucket/key.blobidx, and a tar.gz's key.gzidx); cat \
            archive:s3://…!/member finds it there (one small request) and reads the member from where it \
            says, checking its CRC-32. Only a regular file is indexed locally. An index is written only to a new path or over a regular file that \
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

    @Flag(
        name: .long,
        help:
            "An object on a store or a web server: write its index into the index cache on this machine (the folder BLOBSTREAM_INDEX_CACHE names, else $XDG_CACHE_HOME/blobstream/indexes or ~/.cache/blobstream/indexes), not beside the object; cat and checksum --index-cache then use it with no request for it."
    )
    var indexCache = false

    @Argument(
        help:
            "The gzip file (a path, file:///… or gzip:file:///…) or gzip object (s3://bucket/key, http(s)://… with a strong ETag), or a tar, tar.gz, tar.xz, tar.zst or zip archive (a path; a tar, tar.gz, tar.zst or zip object)."
    )
    var file: String

    @OptionGroup(title: "S3 objects (s3://bucket/key)") var s3: S3SourceArguments

    func validate() throws {
        if spacing < 1 { throw ValidationError("--spacing must be positive, not \(spacing)") }
        if indexCache, output != nil { throw ValidationError("--index-cache and --output name two places: give one") }
        if let output, RemoteGzipIndexing.isRemote(file), BlobSources.namesTheSameObject(output, file) {
            throw UsageError(
                description:
                    "cannot write the index to '\(output)': it is the object indexed, which the index would replace; name another place"
            )
        }
        if indexCache, !RemoteGzipIndexing.isRemote(file) {
            throw ValidationError("--index-cache keeps indexes of objects on a store or a web server only")
        }
    }

    func run() async throws {
        if RemoteGzipIndexing.isRemote(file) {
            guard from == nil else { throw ValidationError("--from adopts an index for a local gzip file only") }
            let cache = indexCache ? try IndexCacheSetting.resolve(asked: true) : nil
            let written = try await RemoteGzipIndexing.run(
                file, output: output, spacing: spacing, cache: cache, s3: s3.settings)
            try Array((written + "\n").utf8).withUnsafeBytes { try Console.writeOut($0) }
            return
        }
        // A file: the library tells what it holds (a `gzip:` or `zstd:` prefix says it).
        var sources = BlobSources(inflate: .automatic)
        sources.indexKey = IndexKeySetting.current // sealed with the run's key, when set
        let prefix = file.lowercased()
        let kind: BlobSources.IndexKind =
            prefix.hasPrefix("gzip:") ? .gzip : prefix.hasPrefix("zstd:") ? .zstdFrames : .whatItHolds
        let kept = try sources.indexFile(
            atPath: try indexedFilePath(file), as: kind, output: output, gzipSpacing: spacing, adopting: from,
            note: Console.note)
        let written = kept.map { "\($0.location)\t\($0.contents)\t\($0.byteCount) bytes" }.joined(separator: "\n")
        try Array((written + "\n").utf8).withUnsafeBytes { try Console.writeOut($0) }
    }
}
