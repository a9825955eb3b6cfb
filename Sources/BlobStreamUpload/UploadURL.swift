import BlobStream
import Foundation

/// Checks upload URLs before any I/O: an HTTP stack handed a port out of range, an empty
/// host or a control byte can crash or misbehave far from the cause, so both upload
/// clients (and the tool) validate first and report what is wrong.
public enum UploadURL {
    /// The URL, when it is one an upload can go to: scheme `http` or `https`, a non-empty
    /// host, a port (when given) from 1 to 65535, no space, control byte, byte that is not
    /// ASCII or `%00`, and only well-formed percent escapes.
    ///
    /// - Throws: `BlobStreamError` `.malformedURL` naming the URL and what is wrong with it,
    ///   e.g. `'http://127.0.0.1:99999/x' is not a valid upload URL: the port 99999 is out
    ///   of range (1–65535)`.
    public static func validate(_ string: String) throws -> URL {
        if let problem = problem(in: string) {
            throw BlobStreamError(.malformedURL, "'\(display(string))' is not a valid upload URL: \(problem)")
        }
        guard let url = URL(string: string), url.host != nil else {
            throw BlobStreamError(
                .malformedURL, "'\(display(string))' is not a valid upload URL: it does not parse as a URL")
        }
        return url
    }

    /// Checks a `URL` value the same way (its `absoluteString`).
    ///
    /// - Throws: `BlobStreamError` `.malformedURL`, as `validate(_:)` with a string.
    @discardableResult
    public static func validate(_ url: URL) throws -> URL {
        _ = try validate(url.absoluteString)
        return url
    }

    /// The URL for messages: control bytes percent-encoded, so that it stays on one line, and
    /// its password left out (`BlobURL.redactingPasswords(_:)`).
    static func display(_ string: String) -> String {
        var out = ""
        for scalar in BlobURL.redactingPasswords(string).unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += String(format: "%%%02X", scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// What is wrong with `string` as an upload URL, or nil.
    static func problem(in string: String) -> String? {
        let bytes = Array(string.utf8)
        if bytes.isEmpty { return "it is empty" }
        for (i, byte) in bytes.enumerated() {
            switch byte {
            case 0x00..<0x20, 0x7F:
                return String(format: "it contains the control byte 0x%02X at byte %d", byte, i)
            case 0x20:
                return "it contains a space at byte \(i) (write it %20)"
            case 0x80...:
                return "it contains a byte that is not ASCII at byte \(i) (percent-encode it)"
            case UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\\"), UInt8(ascii: "^"),
                UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"), UInt8(ascii: "}"):
                return "it contains '\(Character(Unicode.Scalar(byte)))' at byte \(i), which a URL must percent-encode"
            case UInt8(ascii: "%"):
                guard i + 2 < bytes.count, let high = BlobURL.hexValue(bytes[i + 1]),
                    let low = BlobURL.hexValue(bytes[i + 2])
                else {
                    return "the percent escape at byte \(i) is not % and two hex digits"
                }
                if high == 0, low == 0 { return "it contains %00 (an encoded NUL byte) at byte \(i)" }
            default:
                break
            }
        }
        // A scheme is a letter, then letters, digits, '+', '-' or '.', then ':'.
        guard let colon = string.firstIndex(of: ":"),
            let first = string.first, first.isASCII, first.isLetter,
            string[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else {
            return "it has no scheme (write http:// or https://)"
        }
        let scheme = string[..<colon].lowercased()
        guard scheme == "http" || scheme == "https" else {
            return "the scheme '\(scheme)' is not http or https"
        }
        guard string[string.index(after: colon)...].hasPrefix("//") else {
            return "it has no host (write \(scheme)://HOST/…)"
        }
        let rest = string[string.index(colon, offsetBy: 3)...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostAndPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        let host: Substring
        let port: Substring?
        if hostAndPort.hasPrefix("[") {
            guard let close = hostAndPort.firstIndex(of: "]") else { return "the IPv6 host has no closing ']'" }
            host = hostAndPort[hostAndPort.index(after: hostAndPort.startIndex)..<close]
            let after = hostAndPort[hostAndPort.index(after: close)...]
            if after.isEmpty {
                port = nil
            } else if after.hasPrefix(":") {
                port = after.dropFirst()
            } else {
                return "unexpected '\(after)' after the IPv6 host"
            }
            if host.isEmpty { return "it has no host" }
            if let bad = host.first(where: { !($0.isHexDigit || $0 == ":" || $0 == ".") }) {
                return "the IPv6 host '\(host)' contains '\(bad)'"
            }
        } else {
            if let colon = hostAndPort.firstIndex(of: ":") {
                host = hostAndPort[..<colon]
                port = hostAndPort[hostAndPort.index(after: colon)...]
            } else {
                host = hostAndPort
                port = nil
            }
            if host.isEmpty { return "it has no host" }
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~%!$&'()*+,;=")
            if let bad = host.first(where: { !allowed.contains($0) }) {
                return "the host '\(host)' contains '\(bad)'"
            }
        }
        if let port {
            if port.isEmpty { return "the port is empty" }
            guard port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return "the port '\(port)' is not a number" }
            guard port.count <= 5, let value = Int(port), (1...65535).contains(value) else {
                return "the port \(port) is out of range (1–65535)"
            }
        }
        return nil
    }
}
