import ArgumentParser
import BlobStream
import BlobStreamCLI
import Foundation

/// `blobstream cat SOURCE...`: the sources' bytes, one after another, on stdout.
struct Cat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the bytes of each SOURCE to standard output, one after another.")

    @OptionGroup var options: SourceOptions
    @OptionGroup(title: "S3 sources (s3://bucket/key)") var s3: S3SourceArguments
    @Argument(help: "Sources: URLs, paths, or - for standard input.")
    var sources: [String] = ["-"]

    func run() throws {
        try options.forEachStream(sources, s3: s3.settings) { _, pumpBytes in try pumpBytes { try Console.writeOut($0) }
        }
    }
}
