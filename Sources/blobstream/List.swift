import ArgumentParser
import BlobStream
import BlobStreamArchive
import BlobStreamAssets
import BlobStreamCLI
import Foundation

/// `blobstream ls ARCHIVE...` or `blobstream ls --library DIR`: members or assets,
/// tab-separated with a header line, times in ISO 8601 UTC. Names are spelled as an
/// `archive:` URL (and `ARCHIVE!/member`) takes them back (`ArchiveEntry.escapedPath`):
/// one member is one row, and no name sends escape sequences to the terminal.
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List the members of archives, or the assets of a photo library (--library).")

    @Option(name: .long, help: "List the assets of this photo library.")
    var library: String?

    @Argument(help: "Archives: paths or URLs (any source libarchive reads).")
    var archives: [String] = []

    func validate() throws {
        if library == nil && archives.isEmpty { throw ValidationError("name an archive to list, or --library DIR") }
    }

    func run() throws {
        if let library, archives.isEmpty {
            let entries = try DirectoryAssetLibrary(root: URL(fileURLWithPath: library)).assets()
            try Console.print("url\tsize\tedited\tmtime\tpath\n")
            for e in entries {
                let path = BlobURL.escapedName(e.relativePath.utf8)
                try Console.print(
                    "\(BlobURL.escapedText(e.url))\t\(e.size)\t\(e.isEdited ? "yes" : "no")\t\(Self.iso(e.modificationDate))\t\(path)\n"
                )
            }
            return
        }
        let registry = makeRegistry(library: library)
        var headerShown = false // after the first listing that worked: a failure prints nothing on stdout
        try forEachSource(archives) { archive in
            let url = try checkedSourceURL(archive, registry: registry)
            // Through the archive's index (`ARCHIVE.blobidx` beside it) when one matches.
            let entries =
                try indexedEntries(url: url)
                ?? ArchiveListing.entries(of: try registry.makeSource(url: url), name: archive)
            if !headerShown { try Console.print("path\tsize\ttype\tmtime\n") }
            headerShown = true
            for e in entries {
                try Console.print(
                    "\(e.escapedPath)\t\(e.size.map(String.init) ?? "-")\t\(e.type)\t\(e.mtime.map(Self.iso) ?? "-")\n")
            }
        }
    }

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
