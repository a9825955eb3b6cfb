import ArgumentParser
import BlobStream
import BlobStreamCLI
import Crypto
import Foundation

/// `blobstream checksum SOURCE...`: `<sha256>  <name>` lines, like sha256sum.
struct Checksum: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the SHA-256 of each SOURCE as sha256sum does: '<hex>  <name>'.")

    @OptionGroup var options: SourceOptions
    @OptionGroup(title: "S3 sources (s3://bucket/key)") var s3: S3SourceArguments
    @Argument(help: "Sources: URLs, paths, or - for standard input.")
    var sources: [String] = ["-"]

    func run() throws {
        try options.forEachStream(sources, s3: s3.settings) { source, pumpBytes in
            var hasher = SHA256()
            try pumpBytes { hasher.update(bufferPointer: $0) }
            let hex = hasher.finalize().map { String(format: "%02x", $0) }.joined()
            try Console.print("\(hex)  \(BlobURL.escapedText(source))\n") // one line whatever the name holds
        }
    }
}
