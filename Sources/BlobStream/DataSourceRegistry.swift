import Foundation
import Synchronization

/// Maps URL schemes to factories of data sources, so that one string names any source:
/// `file:///data/a.jpg`, `gzip:file:///data/a.gz`, `archive:gzip:file:///data/p.tar.gz!/x`.
///
/// Each module registers its schemes with one explicit call (for example
/// `FileSources.register(in:)`); users add their own with `register(scheme:factory:)`.
/// Factories of wrapping schemes (`gzip:`) hand their inner URL, undecoded, back to the
/// registry, so every scheme composes with every other.
public final class DataSourceRegistry: Sendable {
    /// Makes a source for a URL of the factory's scheme. `url` is the whole string, scheme
    /// included; `registry` resolves inner URLs.
    public typealias Factory = @Sendable (_ url: String, _ registry: DataSourceRegistry) throws -> any BlobDataSource

    private let factories = Mutex<[String: Factory]>([:])

    /// An empty registry.
    public init() {}

    /// Registers (or replaces) the factory for `scheme` (case-insensitive, without `:`).
    public func register(scheme: String, factory: @escaping Factory) {
        precondition(BlobURL.isValidScheme(scheme), "'\(scheme)' is not a valid URL scheme")
        factories.withLock { $0[scheme.lowercased()] = factory }
    }

    /// The registered schemes, sorted.
    public var schemes: [String] { factories.withLock { $0.keys.sorted() } }

    /// Whether a factory is registered for `scheme`.
    public func handles(scheme: String) -> Bool { factories.withLock { $0[scheme.lowercased()] != nil } }

    /// Makes an unopened source for `url`.
    ///
    /// - Throws: `BlobStreamError` `.malformedURL` when `url` has no scheme,
    ///   `.unknownScheme` when no factory is registered for it, or what the factory throws.
    public func makeSource(url: String) throws -> any BlobDataSource {
        guard let scheme = BlobURL.scheme(of: url) else {
            throw BlobStreamError(.malformedURL, "'\(url)' is not a URL: it has no scheme (expected e.g. file:///path)")
        }
        guard let factory = factories.withLock({ $0[scheme.lowercased()] }) else {
            let known = schemes.joined(separator: ", ")
            throw BlobStreamError(.unknownScheme, "unknown URL scheme '\(scheme)' in '\(url)' (registered: \(known.isEmpty ? "none" : known))")
        }
        return try factory(url, self)
    }
}

extension BlobInputStream {
    /// Makes a stream over the source `registry` makes for `url`.
    ///
    /// - Throws: what `DataSourceRegistry.makeSource(url:)` throws.
    public convenience init(url: String, registry: DataSourceRegistry, mode: Mode = .synchronous) throws {
        self.init(dataSource: try registry.makeSource(url: url), mode: mode)
    }
}

/// Helpers for the URL grammar of BlobStream, which works on the raw string (not through
/// Foundation's `URL`, which would treat `!/…` as part of a path or query and decode twice).
public enum BlobURL {
    /// The scheme of `url` (the part before the first `:`), or nil when there is none.
    public static func scheme(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":") else { return nil }
        let scheme = String(url[..<colon])
        return isValidScheme(scheme) ? scheme : nil
    }

    /// RFC 3986: a letter, then letters, digits, `+`, `-` or `.`.
    public static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
        return scheme.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)) }
    }

    /// `url` without its `scheme:` prefix (for wrapping schemes such as `gzip:`).
    public static func removingScheme(_ url: String) -> String {
        guard let colon = url.firstIndex(of: ":") else { return url }
        return String(url[url.index(after: colon)...])
    }

    /// Decodes `%XX` sequences once.
    ///
    /// - Throws: `.malformedURL` naming `context` on a `%` not followed by two hex digits,
    ///   or bytes that are not UTF-8.
    public static func percentDecoded(_ text: String, context: String) throws -> String {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "%") {
                guard i + 2 < utf8.count, let hi = hexValue(utf8[i + 1]), let lo = hexValue(utf8[i + 2]) else {
                    throw BlobStreamError(.malformedURL, "bad percent-escape at character \(i) of '\(context)'")
                }
                bytes.append(hi << 4 | lo)
                i += 3
            } else {
                bytes.append(utf8[i])
                i += 1
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw BlobStreamError(.malformedURL, "'\(context)' decodes to bytes that are not UTF-8")
        }
        return decoded
    }

    /// Percent-encodes `text` for a URL path: everything but unreserved characters and `/`.
    public static func percentEncodedPath(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// The `file://` URL of an absolute path.
    public static func fileURL(path: String) -> String { "file://" + percentEncodedPath(path) }

    /// The absolute path of a `file:` URL (`file:///p`, or `file://localhost/p`), decoded once.
    ///
    /// - Throws: `.malformedURL` for another host, a relative path or a bad escape.
    public static func path(ofFileURL url: String) throws -> String {
        guard scheme(of: url)?.lowercased() == "file" else {
            throw BlobStreamError(.malformedURL, "'\(url)' is not a file: URL")
        }
        var rest = Substring(removingScheme(url))
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            if rest.hasPrefix("localhost/") { rest = rest.dropFirst("localhost".count) }
            guard rest.hasPrefix("/") else {
                throw BlobStreamError(.malformedURL, "'\(url)' names a host; file: URLs name local absolute paths (file:///path)")
            }
        }
        guard rest.hasPrefix("/") else {
            throw BlobStreamError(.malformedURL, "'\(url)' has a relative path; file: URLs take absolute paths (file:///path)")
        }
        return try percentDecoded(String(rest), context: url)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
