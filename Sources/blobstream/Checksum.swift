import ArgumentParser
import BlobStream
import Crypto
import Foundation

/// `blobstream checksum SOURCE...`: `<sha256>  <name>` lines, like sha256sum.
struct Checksum: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the SHA-256 of each SOURCE as sha256sum does: '<hex>  <name>'.")

    @OptionGroup var options: SourceOptions
    @Argument(help: "Sources: URLs, paths, or - for standard input.")
    var sources: [String] = ["-"]

    func run() throws {
        let registry = makeRegistry(library: options.library)
        try forEachSource(sources) { source in
            let stream = try openStream(source, registry: registry, offset: options.offset)
            defer { stream.close() }
            var hasher = SHA256()
            let progress = ProgressLine(label: source, total: stream.dataSource.length)
            try pump(stream, name: source, progress: progress) { hasher.update(bufferPointer: $0) }
            let hex = hasher.finalize().map { String(format: "%02x", $0) }.joined()
            try Console.print("\(hex)  \(source)\n")
        }
    }
}
