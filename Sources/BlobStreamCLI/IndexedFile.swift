// The file `blobstream index` reads, as its argument names it.

import BlobStream

/// The path of the file `blobstream index ARGUMENT` indexes: ARGUMENT as a path, with a
/// `gzip:` or `zstd:` prefix set aside and a `file://` URL decoded. The library refuses
/// anything but a regular file (`BlobSources.indexFile(atPath:as:output:gzipSpacing:adopting:note:)`).
///
/// - Throws: `.malformedURL` for a bad `file://` URL.
package func indexedFilePath(_ argument: String) throws -> String {
    var path = argument
    if ["gzip:", "zstd:"].contains(where: path.lowercased().hasPrefix) { path = BlobURL.removingScheme(path) }
    if BlobURL.scheme(of: path)?.lowercased() == "file" { path = try BlobURL.path(ofFileURL: path) }
    return path
}
