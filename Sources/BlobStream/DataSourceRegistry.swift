import Foundation

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

    private let factories = Locked<[String: Factory]>([:])

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
            throw BlobStreamError(
                .unknownScheme,
                "unknown URL scheme '\(scheme)' in '\(url)' (registered: \(known.isEmpty ? "none" : known))")
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
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else {
            return false
        }
        return scheme.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0))
        }
    }

    /// `url` without its `scheme:` prefix (for wrapping schemes such as `gzip:`).
    public static func removingScheme(_ url: String) -> String {
        guard let colon = url.firstIndex(of: ":") else { return url }
        return String(url[url.index(after: colon)...])
    }

    /// Decodes `%XX` sequences once.
    ///
    /// - Throws: `.malformedURL` naming `context` on a `%` not followed by two hex digits,
    ///   a NUL (`%00` or a literal one), or bytes that are not UTF-8 (use
    ///   `percentDecodedBytes(_:context:)` for names that may not be UTF-8).
    public static func percentDecoded(_ text: String, context: String) throws -> String {
        let bytes = try percentDecodedBytes(text, context: context)
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw BlobStreamError(.malformedURL, "'\(context)' decodes to bytes that are not UTF-8")
        }
        return decoded
    }

    /// Decodes `%XX` sequences once, to raw bytes: what a name stored in an archive (which
    /// may not be UTF-8) is matched against. `escapedName(_:)` is its inverse.
    ///
    /// No decoded part of a URL may hold a NUL: a C call (`open`, libarchive) would cut the
    /// path or name there and read something else than what the URL names.
    ///
    /// - Throws: `.malformedURL` naming `context` and the escape on a `%` not followed by
    ///   two hex digits, and on a NUL, whether spelled `%00` or literal.
    public static func percentDecodedBytes(_ text: String, context: String) throws -> [UInt8] {
        let utf8 = Array(text.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "%") {
                guard i + 2 < utf8.count, let hi = hexValue(utf8[i + 1]), let lo = hexValue(utf8[i + 2]) else {
                    let escape = String(decoding: utf8[i..<min(i + 3, utf8.count)], as: UTF8.self)
                    let why =
                        i + 2 < utf8.count || escape.dropFirst().contains(where: { !$0.isHexDigit })
                        ? "'%' must be followed by two hex digits" : "it is cut short"
                    throw BlobStreamError(
                        .malformedURL,
                        "bad percent-escape '\(escapedText(escape))' at byte \(i) of '\(escapedText(context))': \(why) (a '%' itself is written %25)"
                    )
                }
                let byte = hi << 4 | lo
                guard byte != 0 else {
                    throw BlobStreamError(
                        .malformedURL,
                        "'\(escapedText(context))' holds %00 (a NUL byte) at byte \(i): no path or name may contain NUL"
                    )
                }
                bytes.append(byte)
                i += 3
            } else {
                guard utf8[i] != 0 else {
                    throw BlobStreamError(
                        .malformedURL,
                        "'\(escapedText(context))' holds a NUL byte at byte \(i): no path or name may contain NUL")
                }
                bytes.append(utf8[i])
                i += 1
            }
        }
        return bytes
    }

    /// The spelling of a name (its raw bytes) that the URL forms accept back, as
    /// `blobstream ls` prints it: control bytes (0x00–0x1F, 0x7F, and the C1 controls
    /// U+0080–U+009F), bytes that are not part of valid UTF-8, `%`, and a `!` before a `/`
    /// (an `archive:` URL ends the archive's URL at the last `!/`) percent-encoded as `%XX`;
    /// everything else as it is. One name is always one line, no terminal escape sequence
    /// survives, and `percentDecodedBytes(_:context:)` gives the bytes back.
    ///
    /// `"a\nb"` → `a%0Ab`, `"100%"` → `100%25`, `"x!/y"` → `x%21/y`, latin-1 `[0x4B, 0xC4]`
    /// → `K%C4`.
    public static func escapedName(_ bytes: some Collection<UInt8>) -> String {
        escape(Array(bytes), percent: true)
    }

    /// `text` with its control characters (C0, DEL, C1) percent-encoded and nothing else
    /// changed: for showing text as given (an argument, a URL) on one line of a terminal
    /// without letting it forge lines or send escape sequences.
    public static func escapedText(_ text: String) -> String {
        escape(Array(text.utf8), percent: false)
    }

    /// Encodes control bytes and bytes that are not UTF-8; for names (`percent`) also `%`
    /// and a `!` followed by `/`.
    private static func escape(_ bytes: [UInt8], percent: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        func encode(_ byte: UInt8) {
            let hex = Array("0123456789ABCDEF".utf8)
            out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
        }
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b < 0x80 {
                let special =
                    percent
                    && (b == UInt8(ascii: "%")
                        || (b == UInt8(ascii: "!") && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "/")))
                if b < 0x20 || b == 0x7F || special { encode(b) } else { out.append(b) }
                i += 1
                continue
            }
            let n = validSequenceLength(bytes, at: i)
            if n == 0 {
                encode(b)
                i += 1
            } else if n == 2, b == 0xC2, bytes[i + 1] < 0xA0 {
                encode(b) // a C1 control (U+0080–U+009F): some terminals act on them
                encode(bytes[i + 1])
                i += 2
            } else {
                out += bytes[i..<i + n]
                i += n
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The length of the well-formed UTF-8 sequence at `i` (no overlong forms, surrogates
    /// or scalars past U+10FFFF), or 0 when there is none.
    private static func validSequenceLength(_ bytes: [UInt8], at i: Int) -> Int {
        let b = bytes[i]
        let n: Int
        var lo: UInt8 = 0x80
        var hi: UInt8 = 0xBF // bounds of the second byte
        switch b {
        case 0xC2...0xDF: n = 2
        case 0xE0:
            n = 3
            lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: n = 3
        case 0xED:
            n = 3
            hi = 0x9F
        case 0xF0:
            n = 4
            lo = 0x90
        case 0xF1...0xF3: n = 4
        case 0xF4:
            n = 4
            hi = 0x8F
        default: return 0
        }
        guard i + n <= bytes.count, (lo...hi).contains(bytes[i + 1]) else { return 0 }
        for k in 2..<n where !(0x80...0xBF).contains(bytes[i + k]) { return 0 }
        return n
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
                throw BlobStreamError(
                    .malformedURL, "'\(url)' names a host; file: URLs name local absolute paths (file:///path)")
            }
        }
        guard rest.hasPrefix("/") else {
            throw BlobStreamError(
                .malformedURL, "'\(url)' has a relative path; file: URLs take absolute paths (file:///path)")
        }
        return try percentDecoded(String(rest), context: url)
    }

    /// The value of one hexadecimal digit (`0-9`, `a-f`, `A-F`), nil for any other byte;
    /// for the package's other URL checks too (`UploadURL`).
    package static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
