import BlobStream
import Foundation

/// Registers the `zstd:` scheme: `zstd:<url>` decodes the source of any registered URL.
public enum ZstdSources {
    /// The scheme this module serves.
    public static let scheme = ZstdDataSource.scheme

    /// Registers `zstd:` in `registry`. The inner URL, handed on undecoded, is made by the
    /// same registry: `zstd:file:///data/a.zst`, `zstd:s3://bucket/logs.jsonl.zst`,
    /// `zstd:archive:file:///x.tar!/y.zst`. Frames may ask for windows up to 2^`windowLog`
    /// bytes (zstd's own limit, 2^27, by default).
    public static func register(in registry: DataSourceRegistry, windowLog: Int = ZstdWindow.defaultLog) {
        registry.register(scheme: scheme) { url, registry in
            let inner = BlobURL.removingScheme(url)
            guard !inner.isEmpty else {
                throw BlobStreamError(.malformedURL, "'\(url)' names no inner URL (expected zstd:<url>)")
            }
            return ZstdDataSource(upstream: try registry.makeSource(url: inner), name: inner, windowLog: windowLog)
        }
    }
}
