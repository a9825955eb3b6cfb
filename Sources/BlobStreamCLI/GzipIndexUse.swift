// `blobstream index` for gzip files, and which index the reading commands use (--index).

import BlobStream
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamSources
import Foundation

/// Which seek-point or member index `gzip:` and `archive:` sources use (`--index`): the
/// library's `BlobSources.IndexUse`.
package typealias GzipIndexUse = BlobSources.IndexUse

/// `blobstream index`: builds the seek-point index of a gzip file and writes it (see
/// `OutputFile`: a new path or a regular file that is none of the inputs, checked before the
/// pass). With `adopting`, the foreign index at that path is checked against the file and
/// given BlobStream's record (`GzipIndex.adopt`) instead of building one.
///
/// With `key` (by default the run's, `BLOBSTREAM_INDEX_KEY`), the index is sealed with it
/// (`IndexSeal`).
///
/// - Returns: what was written (path, seek points, bytes).
package func writeGzipIndex(
    of argument: String, to output: String?, spacing: Int, adopting foreign: String? = nil,
    key: IndexKey? = IndexKeySetting.current
) throws -> String {
    let path = try indexedFilePath(argument)
    let destination = try OutputFile(
        output ?? GzipIndex.sidecar(of: path), role: "the gzip index",
        inputs: [path] + (foreign.map { [$0] } ?? []))
    let index =
        try foreign.map { try GzipIndex.adopt(GzipIndex.read(fromPath: $0), forFileAtPath: path, name: $0) }
        ?? GzipIndex.build(fileAtPath: path, spacing: spacing)
    let bytes = try index.sealing(index.serializedLoadingWindows(), with: key)
    try destination.write(bytes)
    return "\(destination.path)\t\(index.points.count) seek points\t\(bytes.count) bytes"
}
