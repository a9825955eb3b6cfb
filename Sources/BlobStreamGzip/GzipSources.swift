import BlobStream
import Foundation

/// Registers the `gzip:` scheme: `gzip:<url>` inflates the source of any registered URL.
public enum GzipSources {
    /// The scheme this module serves.
    public static let scheme = GzipDataSource.scheme

    /// Registers `gzip:` in `registry`. The inner URL, handed on undecoded, is made by the
    /// same registry: `gzip:file:///data/a.gz`, `gzip:archive:file:///x.tar!/y.gz`. Its
    /// sources inflate with `engine` (by default ISA-L when it can be loaded, else zlib).
    ///
    /// With `usesSidecarIndex` (the default), a `file:` URL's seek-point index beside it
    /// (`FILE.gz.gzidx`, written by `blobstream index` or `GzipIndex.write(toPath:)`) is used
    /// when it carries BlobStream's record and matches the file (`GzipIndex.lookUp`): a whole
    /// read then decodes in parallel, every chunk checked against its CRC-32, and moves jump
    /// to a seek point. A stale, damaged or foreign sidecar is ignored (the file is inflated
    /// from its start); `GzipDataSource.decoding` says which it is.
    public static func register(
        in registry: DataSourceRegistry, engine: InflateEngine = .automatic, usesSidecarIndex: Bool = true
    ) {
        registry.register(scheme: scheme) { url, registry in
            let inner = BlobURL.removingScheme(url)
            guard !inner.isEmpty else {
                throw BlobStreamError(.malformedURL, "'\(url)' names no inner URL (expected gzip:<url>)")
            }
            let upstream = try registry.makeSource(url: inner)
            let index = usesSidecarIndex ? sidecarIndex(forURL: inner) : nil
            return GzipDataSource(upstream: upstream, name: inner, index: index, engine: engine)
        }
    }

    /// The matching index beside the file a `file:` URL names, or nil (another scheme, no
    /// sidecar, or one that cannot be used: see `GzipIndex.lookUp(forFileAtPath:indexPath:)`).
    public static func sidecarIndex(forURL url: String) -> GzipIndex? {
        guard BlobURL.scheme(of: url)?.lowercased() == "file", let path = try? BlobURL.path(ofFileURL: url),
            case .matching(let index)? = try? GzipIndex.lookUp(forFileAtPath: path), index.hasChunkCRC32s
        else { return nil }
        return index
    }
}
