import ArgumentParser
import BlobStream
import BlobStreamCLI
import Foundation

/// `blobstream cat SOURCE...`: the sources' bytes, one after another, on stdout.
struct Cat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cat",
        abstract: "Write the bytes of each SOURCE to standard output, one after another.",
        discussion: """
            --offset N --length M writes bytes N to N+M-1 of each SOURCE, as \
            'tail -c +N+1 | head -c M' would: fewer than M when the SOURCE ends first (not an error). \
            Bytes that a check covers (a gzip member's CRC-32, a zip or indexed member's CRC-32, an index \
            chunk's CRC-32, a compressed archive's end) are written with exit 0 only once that check passed: \
            the SOURCE is read on, without writing, to its next check point (for a .gz without an index, the \
            member's end: build an index with 'blobstream index'). --unverified-prefix skips that: UNVERIFIED.
            On a terminal, a SOURCE that takes more than half a second shows a progress line on stderr, \
            then a summary line (bytes, seconds, rate); never when stderr is not a terminal, or with --quiet.
            """)

    @OptionGroup var options: SourceOptions
    @OptionGroup(title: "S3 sources (s3://bucket/key)") var s3: S3SourceArguments

    @Option(name: .long, help: "Write at most this many bytes of each source (after --offset).")
    var length: Int64?

    @Flag(
        name: .long,
        help: """
            With --length: stop there, without reading on to the source's next check point. \
            UNVERIFIED: the bytes written may be wrong with exit 0.
            """)
    var unverifiedPrefix = false

    @Flag(name: [.short, .long], help: "No progress line and no summary on a terminal.")
    var quiet = false

    @Argument(help: "Sources: URLs, paths, or - for standard input.")
    var sources: [String] = ["-"]

    func validate() throws {
        if let length, length < 0 { throw ValidationError("--length must be 0 or more, not \(length)") }
    }

    func run() throws {
        let pipe = Console.stdoutIsPipe
        if pipe { Console.widenStdoutPipe() }
        try options.forEachStream(
            sources, remote: RunConnections(caBundle: options.caBundle).remote(s3: s3.settings), length: length,
            unverifiedPrefix: unverifiedPrefix, sendingToPipe: pipe, quiet: quiet
        ) { _, pumpBytes in
            try pumpBytes { try Console.writeOut($0) }
        }
    }
}
