import BlobStream

/// Registers the `gzip:` scheme: `gzip:<url>` inflates the source of any registered URL.
public enum GzipSources {
    /// The scheme this module serves.
    public static let scheme = GzipDataSource.scheme

    /// Registers `gzip:` in `registry`. The inner URL, handed on undecoded, is made by the
    /// same registry: `gzip:file:///data/a.gz`, `gzip:archive:file:///x.tar!/y.gz`. Its
    /// sources inflate with `engine` (by default ISA-L when it can be loaded, else zlib).
    public static func register(in registry: DataSourceRegistry, engine: InflateEngine = .automatic) {
        registry.register(scheme: scheme) { url, registry in
            let inner = BlobURL.removingScheme(url)
            guard !inner.isEmpty else {
                throw BlobStreamError(.malformedURL, "'\(url)' names no inner URL (expected gzip:<url>)")
            }
            return GzipDataSource(upstream: try registry.makeSource(url: inner), name: inner, engine: engine)
        }
    }
}
