import ArgumentParser
import BlobStream
import BlobStreamCLI
import BlobStreamCompression
import Glibc

/// `blobstream compress --seekable SOURCE --output FILE.zst`: zstd's seekable format.
struct Compress: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compress",
        abstract: "Compress SOURCE into zstd's seekable format, which any reader can enter at any offset.",
        discussion: """
            The output is independent zstd frames of --frame-size bytes of SOURCE each (the last one \
            shorter), each with its content size and checksum, then the seek table (a skippable frame \
            with every frame's sizes and checksum), as facebook/zstd's contrib/seekable_format defines it. \
            Any zstd decoder reads it whole ('zstd -d'); blobstream cat --offset, pyzstd's SeekableZstdFile \
            and indexed_zstd read an offset by decoding one frame. SOURCE is any source cat reads. \
            The file is written only to a new path or over a regular file that is not SOURCE (through any \
            link), through a temporary file in the same folder renamed over it once SOURCE was read whole: \
            a SOURCE that fails leaves the destination as it was. Without --output the bytes go to standard \
            output, unless it is a terminal.
            """)

    @Flag(name: .long, help: "Write zstd's seekable format (the one format compress writes; required).")
    var seekable = false

    @Option(name: .long, help: "The bytes of SOURCE in each frame: a number, or with KiB, MiB or GiB (default 4MiB).")
    var frameSize = "4MiB"

    @Option(name: .long, help: "The zstd level (default 3, as zstd's; up to 19, or 22).")
    var level = 3

    @Option(name: [.short, .long], help: "Where to write the file (default: standard output).")
    var output: String?

    @OptionGroup var options: SourceOptions
    @OptionGroup(title: "S3 sources (s3://bucket/key)") var s3: S3SourceArguments

    @Argument(help: "The source: a URL, a path, or - for standard input.")
    var source: String

    var frameSizeBytes: Int? {
        S3UploadArguments.size(frameSize).flatMap {
            (1...ZstdSeekableCompressor.maximumFrameSize).contains($0) ? $0 : nil
        }
    }

    func validate() throws {
        guard seekable else {
            throw ValidationError("compress writes zstd's seekable format only: say so with --seekable")
        }
        guard frameSizeBytes != nil else {
            throw ValidationError(
                "--frame-size must be 1 byte to 1GiB (a number of bytes, or with KiB, MiB or GiB), not \(frameSize)")
        }
        do {
            _ = try ZstdSeekableCompressor(level: level, frameSize: 1)
        } catch {
            throw ValidationError("--level: \(error.message)")
        }
        if options.offset != nil { throw ValidationError("compress reads SOURCE whole: --offset is not taken") }
        if output == nil && isatty(1) == 1 {
            throw ValidationError("the compressed bytes would go to a terminal: name a file with --output, or redirect")
        }
    }

    func run() throws {
        let compressor = try ZstdSeekableCompressor(level: level, frameSize: frameSizeBytes!)
        let destination = try output.map {
            try OutputFile($0, role: "the compressed file", inputs: localInputPaths(source))
        }
        let remote = RunConnections(caBundle: options.caBundle).remote(s3: s3.settings)
        try options.forEachStream([source], remote: remote) { _, pumpBytes in
            if let destination {
                try destination.write { write in
                    try withoutActuallyEscaping(write) { write in
                        try pumpBytes { bytes in try compressor.append(bytes, emit: write) }
                        try compressor.finish(emit: write)
                    }
                }
            } else {
                try pumpBytes { bytes in try compressor.append(bytes) { try Console.writeOut($0) } }
                try compressor.finish { try Console.writeOut($0) }
            }
        }
    }
}
