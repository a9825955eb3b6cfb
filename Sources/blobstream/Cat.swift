import ArgumentParser
import BlobStream
import Foundation

/// `blobstream cat SOURCE...`: the sources' bytes, one after another, on stdout.
struct Cat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the bytes of each SOURCE to standard output, one after another.")

    @OptionGroup var options: SourceOptions
    @Argument(help: "Sources: URLs, paths, or - for standard input.")
    var sources: [String] = ["-"]

    func run() throws {
        let registry = makeRegistry(library: options.library)
        try forEachSource(sources) { source in
            let stream = try openStream(source, registry: registry, offset: options.offset)
            defer { stream.close() }
            let progress = ProgressLine(label: source, total: stream.dataSource.length)
            try pump(stream, name: source, progress: progress) { try Console.writeOut($0) }
        }
    }
}
