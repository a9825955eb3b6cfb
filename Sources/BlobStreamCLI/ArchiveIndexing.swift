// Archive member indexes for the tool: writing one (`blobstream index ARCHIVE`) and listing
// through one (`blobstream ls`).

import BlobStream
import BlobStreamArchive
import Foundation

/// Indexes the archive at `path` (an uncompressed tar or a zip) and writes the index to
/// `output` (by default `ARCHIVE.blobidx` beside it). Returns a one-line summary for the
/// user, tab-separated: the index file, how many members (and the format), its size.
///
/// - Throws: what `ArchiveIndex.build(archiveAt:)` and `write(to:)` throw (errors name the
///   archive or the index file).
package func writeArchiveIndex(path: String, output: String? = nil) throws -> String {
    let index = try ArchiveIndex.build(archiveAt: path)
    let destination = output ?? ArchiveIndex.defaultPath(forArchiveAt: path)
    try index.write(to: destination)
    let format = index.format == .tar ? "tar" : "zip"
    let size = (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int) ?? 0
    return "\(destination)\t\(index.members.count) members (\(format))\t\(size) bytes"
}

/// Whether `argument` (a path, `file://…` or `gzip:…`) names a gzip file: a `gzip:` URL, or a
/// file whose first two bytes are gzip's magic (1f 8b). Anything else is taken for an archive.
package func isGzipFile(_ argument: String) throws -> Bool {
    if argument.lowercased().hasPrefix("gzip:") { return true }
    let path =
        BlobURL.scheme(of: argument)?.lowercased() == "file" ? try BlobURL.path(ofFileURL: argument) : argument
    guard let handle = FileHandle(forReadingAtPath: path) else {
        throw BlobStreamError(.notFound, "cannot open '\(path)' to index it")
    }
    defer { try? handle.close() }
    let magic = (try? handle.read(upToCount: 2)) ?? Data()
    return magic == Data([0x1F, 0x8B])
}

/// The entries of the archive a SOURCE names, from the index beside it when the SOURCE is a
/// regular file with a matching `ARCHIVE.blobidx`; nil when there is none (or it does not
/// match: it is then ignored), so that the caller lists the headers.
package func indexedEntries(url: String) -> [ArchiveEntry]? {
    guard BlobURL.scheme(of: url)?.lowercased() == "file", let path = try? BlobURL.path(ofFileURL: url),
        FileManager.default.fileExists(atPath: ArchiveIndex.defaultPath(forArchiveAt: path)),
        let index = try? ArchiveIndex.read(from: ArchiveIndex.defaultPath(forArchiveAt: path)),
        (try? index.check(againstArchiveAt: path)) != nil
    else { return nil }
    return index.entries
}
