// `gzip:` sources over files read with a seek-point index (cat/checksum --offset, --index).

import BlobStream
import BlobStreamFiles
import BlobStreamGzip
import Foundation

/// Which seek-point index a `gzip:` source over a file uses.
package enum GzipIndexUse: Sendable {
    /// None: inflate from the start.
    case none
    /// `FILE.gz.gzidx` beside the file, when it carries BlobStream's identity and matches
    /// the file; otherwise none (a stale or foreign sidecar is never used).
    case implicit
    /// The index at this path; an error when it cannot be read or does not match.
    case named(String)
}

/// Registers `gzip:` again so that, over a `file:` URL, it reads with the index `use` picks.
func registerIndexedGzip(in registry: DataSourceRegistry, _ use: GzipIndexUse, engine: GzipInflateEngine) {
    if case .none = use { return }
    registry.register(scheme: GzipSources.scheme) { url, registry in
        let inner = BlobURL.removingScheme(url)
        guard !inner.isEmpty else {
            throw BlobStreamError(.malformedURL, "'\(url)' names no inner URL (expected gzip:<url>)")
        }
        let upstream = try registry.makeSource(url: inner)
        var index: GzipIndex?
        if BlobURL.scheme(of: inner)?.lowercased() == "file" {
            let path = try BlobURL.path(ofFileURL: inner)
            switch use {
            case .none: break
            case .implicit:
                if case .matching(let found) = try GzipIndex.lookUp(forFileAtPath: path) { index = found }
            case .named(let indexPath):
                if case .matching(let found) = try GzipIndex.lookUp(forFileAtPath: path, indexPath: indexPath) {
                    index = found
                }
            }
        } else if case .named(let indexPath) = use {
            throw BlobStreamError(
                .unsupported, "\(inner): --index \(indexPath) applies to gzip: sources over files only")
        }
        return GzipDataSource(upstream: upstream, name: inner, index: index, engine: engine)
    }
}

/// `blobstream index`: builds the seek-point index of a gzip file and writes it (see
/// `OutputFile`: a new path or a regular file that is not the gzip file, checked before the
/// pass).
///
/// - Returns: what was written (path, seek points, bytes).
package func writeGzipIndex(of argument: String, to output: String?, spacing: Int) throws -> String {
    let path = try indexedFilePath(argument)
    let destination = try OutputFile(
        output ?? GzipIndex.sidecarPath(forFileAtPath: path), role: "the gzip index", inputs: [path])
    let index = try GzipIndex.build(fileAtPath: path, spacing: spacing)
    let bytes = index.serialized()
    try destination.write(bytes)
    return "\(destination.path)\t\(index.points.count) seek points\t\(bytes.count) bytes"
}
