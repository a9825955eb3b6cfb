// Listing an archive through its member index (`blobstream ls`).

import BlobStream
import BlobStreamArchive

/// The entries of the archive a SOURCE names, from the index beside it when the SOURCE is a
/// regular file with a matching `ARCHIVE.blobidx`, or an object on a store or a web server
/// with a matching `URL.blobidx` (made by `registry`); nil when there is none (or it does not
/// match, or is not sealed with `key`: it is then ignored), so that the caller lists the
/// headers. `key`: by default the run's (`BLOBSTREAM_INDEX_KEY`).
package func indexedEntries(
    url: String, registry: DataSourceRegistry, key: IndexKey? = IndexKeySetting.current
) -> [ArchiveEntry]? {
    if ["s3", "http", "https"].contains(BlobURL.scheme(of: url)?.lowercased() ?? "") {
        guard let made = try? registry.makeSource(url: url) else { return nil }
        defer { made.close() }
        guard let object = made as? any BlobRangeReading else { return nil }
        object.open()
        guard
            case .matching(let index)? = try? ArchiveIndex.lookUp(
                for: object, at: url, key: key, makeSource: { try registry.makeSource(url: $0) })
        else { return nil }
        return index.entries
    }
    guard BlobURL.scheme(of: url)?.lowercased() == "file", let path = try? BlobURL.path(ofFileURL: url),
        case .matching(let index)? = try? ArchiveIndex.lookUp(forFileAtPath: path, key: key)
    else { return nil }
    return index.entries
}
