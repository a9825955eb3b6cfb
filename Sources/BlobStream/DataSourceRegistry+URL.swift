import Foundation

// `URL`-typed entry points. Each one reads the URL as its string, `url.absoluteString`,
// and hands it to the registry's grammar, which splits the raw string: what Foundation
// would parse as a path, query or fragment (`archive:file:///a.tar!/m`, `%21`, `#`) reaches
// the source's factory exactly as written, and percent-escapes are decoded once, by the
// factory.

extension DataSourceRegistry {
    /// Makes an unopened source for `url`, read as `url.absoluteString` (see
    /// `makeSource(url:)` for strings). `URL(fileURLWithPath:)` and
    /// `URL(string: "gzip:file:///data/a.gz")` both work.
    ///
    /// - Throws: what `makeSource(url:)` throws for the URL's string.
    public func makeSource(url: URL) throws -> any BlobDataSource {
        try makeSource(url: url.absoluteString)
    }
}

extension BlobInputStream {
    /// Makes a stream over the source `registry` makes for `url`, read as
    /// `url.absoluteString`.
    ///
    /// ```swift
    /// let stream = try BlobInputStream(url: URL(fileURLWithPath: "/data/a.jpg"), registry: registry)
    /// ```
    ///
    /// - Throws: what `DataSourceRegistry.makeSource(url:)` throws.
    public convenience init(url: URL, registry: DataSourceRegistry, mode: Mode = .synchronous) throws {
        self.init(dataSource: try registry.makeSource(url: url), mode: mode)
    }
}

extension BlobURL {
    /// The absolute path of a `file:` URL, decoded once from `url.absoluteString` (the
    /// `URL` form of `path(ofFileURL:)` for strings).
    ///
    /// - Throws: `.malformedURL` for another scheme or host, a relative path or a bad escape.
    public static func path(ofFileURL url: URL) throws -> String {
        try path(ofFileURL: url.absoluteString)
    }
}
