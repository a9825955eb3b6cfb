import ArgumentParser
import BlobStream
import BlobStreamCLI
import Foundation

/// `blobstream cat SOURCE...`: the sources' bytes, one after another, on stdout.
struct Cat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the bytes of each SOURCE to standard output, one after another.")

    @OptionGroup var options: SourceOptions
    @Argument(help: "Sources: URLs, paths, or - for standard input.")
    var sources: [String] = ["-"]

    func run() throws {
        try options.forEachStream(sources) { _, pumpBytes in try pumpBytes { try Console.writeOut($0) } }
    }
}
