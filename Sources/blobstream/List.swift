import ArgumentParser
import BlobStream
import BlobStreamArchive
import BlobStreamAssets
import BlobStreamCLI
import Foundation

/// `blobstream ls ARCHIVE...` or `blobstream ls --library DIR`: members or assets,
/// tab-separated with a header line, times in ISO 8601 UTC. Names are spelled as an
/// `archive:` URL (and `ARCHIVE!/member`) takes them back (`ArchiveEntry.escapedPath`):
/// one member is one row, and no name sends escape sequences to the terminal. `ls -l`
/// prints `tar -tv`'s layout instead (`TarStyleListing`), `ls --json` one JSON document.
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List the members of archives, or the assets of a photo library (--library).")

    @Option(name: .long, help: "List the assets of this photo library.")
    var library: String?

    @Flag(
        name: [.customShort("l"), .customLong("long")],
        help: "Archives: list as 'tar -tv' does (mode, owner/group, size, date, name; no header).")
    var long = false

    @Flag(
        name: .long,
        help:
            "Archives: print one JSON array of members (archive, path, escapedPath, type, size, mode, modeString, mtime, uid, gid, owner, group, linkTarget; keys absent when unknown)."
    )
    var json = false

    @Argument(help: "Archives: paths or URLs (any source libarchive reads).")
    var archives: [String] = []

    func validate() throws {
        if library == nil && archives.isEmpty { throw ValidationError("name an archive to list, or --library DIR") }
        if long && json { throw ValidationError("choose one of -l and --json") }
        if (long || json) && archives.isEmpty { throw ValidationError("-l and --json list archives, not --library") }
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
        let registry = makeRegistry(library: library, remote: RunConnections(caBundle: nil).remote())
        if long || json { return try listInDetail(registry: registry) }
        var headerShown = false // after the first listing that worked: a failure prints nothing on stdout
        try forEachSource(archives) { archive in
            let url = try checkedSourceURL(archive, registry: registry)
            // Through the archive's index (`ARCHIVE.blobidx` beside it) when one matches.
            let entries =
                try indexedEntries(url: url, registry: registry)
                ?? ArchiveListing.entries(of: try registry.makeSource(url: url), name: archive)
            if !headerShown { try Console.print("path\tsize\ttype\tmtime\n") }
            headerShown = true
            for e in entries {
                try Console.print(
                    "\(e.escapedPath)\t\(e.size.map(String.init) ?? "-")\t\(e.type)\t\(e.mtime.map(Self.iso) ?? "-")\n")
            }
        }
    }

    /// `-l` and `--json`: every fact of each member, read from the headers (an index does
    /// not keep owners). With `--json` nothing is printed unless every archive was listed.
    func listInDetail(registry: DataSourceRegistry) throws {
        var tarStyle = TarStyleListing()
        var members: [JSONListedEntry] = []
        try forEachSource(archives) { archive in
            let url = try checkedSourceURL(archive, registry: registry)
            let entries = try ArchiveListing.entries(
                of: try registry.makeSource(url: url), name: archive, readingTarHeaders: true)
            if json {
                members += entries.map { JSONListedEntry(archive: archive, $0) }
                return
            }
            for e in entries { try Console.print(tarStyle.line(e)) }
        }
        if json { try Console.print(try JSONListedEntry.document(members)) }
    }

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
