import ArgumentParser
import BlobStream
import BlobStreamCLI
import Foundation

/// `blobstream info SOURCE...`: what each source is, tab-separated with a header line.
struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Print each SOURCE's length, kind and how it reaches an offset (tab-separated).",
        discussion: """
            One header line (name, url, kind, length, offset), then a row per SOURCE: the name \
            as given, the URL it was read as, the kind of source (file, gzip, archivemember, …), \
            its length in bytes or `unknown`, and how an offset is reached: `seek` (at once), \
            `read-and-discard` (by reading the bytes before it) or `none`. Control characters \
            in names are percent-encoded, so a row stays one line.
            """)

    @Option(name: .long, help: "The photo library that resolves asset URLs.")
    var library: String?

    @Argument(help: "Sources: URLs, paths, or - for standard input.")
    var sources: [String]

    func run() throws {
        let registry = makeRegistry(library: library, remote: RunConnections(caBundle: nil).remote())
        var headerShown = false // before the first row: a failure prints nothing on stdout
        try forEachSource(sources) { source in
            let stream = try openStream(source, registry: registry, offset: nil)
            defer { stream.close() }
            let s = stream.dataSource
            let url = sourceURL(source, registry: registry)
            let length = s.length.map(String.init) ?? "unknown"
            // As given, but one line: control characters percent-encoded.
            if !headerShown { try Console.print("name\turl\tkind\tlength\toffset\n") }
            headerShown = true
            try Console.print(
                "\(BlobURL.escapedText(source))\t\(BlobURL.escapedText(url))\t\(kind(of: s))\t\(length)\t\(s.offsetCapability)\n"
            )
        }
    }

    /// A short kind name: the source's type without its `DataSource` suffix, lowercased.
    func kind(of source: any BlobDataSource) -> String {
        var name = String(describing: type(of: source))
        if name.hasSuffix("DataSource") { name.removeLast("DataSource".count) }
        return name.lowercased()
    }
}
