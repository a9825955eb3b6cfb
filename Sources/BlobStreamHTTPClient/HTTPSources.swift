import BlobStream
import Foundation

/// Registers the `http:` and `https:` schemes: `HTTPRangeDataSource` reads them by ranged
/// GETs, so `gzip:https://host/x.gz` and `archive:http://host/x.tar!/member` work too.
public enum HTTPSources {
    /// The schemes this module serves.
    public static let schemes = ["http", "https"]

    /// Registers `http:` and `https:` in `registry`; every source made reads with `options`
    /// (by default: 8 MiB blocks, 4 GETs in flight, retries, 5 redirects; trust roots and
    /// proxies from the environment, see
    /// `HTTPConnectionOptions.fromEnvironment`).
    public static func register(in registry: DataSourceRegistry, options: HTTPRangeOptions = HTTPRangeOptions()) {
        for scheme in schemes {
            registry.register(scheme: scheme) { url, _ in try makeSource(url: url, options: options) }
        }
    }

    /// A source for an `http://` or `https://` URL.
    ///
    /// - Throws: `BlobStreamError` `.malformedURL` when `url` is not such a URL with a host.
    public static func makeSource(url: String, options: HTTPRangeOptions = HTTPRangeOptions()) throws
        -> HTTPRangeDataSource
    {
        guard let parsed = URL(string: url), schemes.contains(parsed.scheme?.lowercased() ?? ""),
            let host = parsed.host, !host.isEmpty
        else {
            throw BlobStreamError(.malformedURL, "'\(url)' is not an http:// or https:// URL with a host")
        }
        return HTTPRangeDataSource(url: parsed, options: options)
    }
}
