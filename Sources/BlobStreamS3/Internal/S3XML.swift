import Foundation

/// An element of the small XML documents S3 answers with (errors, upload ids, part lists):
/// its name (without a namespace prefix), its children, and its text.
///
/// A small parser of its own instead of FoundationXML (which loads libxml2): S3's answers
/// use elements, attributes (skipped), text, the five named entities and character
/// references, an XML declaration, and nothing else. Anything it cannot read is an error,
/// never a partial document.
struct S3XMLElement: Sendable {
    var name: String
    var children: [S3XMLElement] = []
    var text = ""

    /// The first child named `name`.
    func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }
    /// Every child named `name`.
    func children(_ name: String) -> [S3XMLElement] { children.filter { $0.name == name } }
    /// The text of the first child named `name`.
    subscript(_ name: String) -> String? { child(name)?.text }

    /// The root element of `data`.
    static func parse(_ data: Data) throws(S3XMLParseError) -> S3XMLElement {
        var parser = Parser(bytes: Array(data))
        return try parser.document()
    }
}

/// What the parser could not read, and where.
struct S3XMLParseError: Error, CustomStringConvertible {
    var reason: String
    var offset: Int
    var description: String { "malformed XML at byte \(offset): \(reason)" }
}

private struct Parser {
    let bytes: [UInt8]
    var i = 0

    mutating func document() throws(S3XMLParseError) -> S3XMLElement {
        try skipMisc()
        guard i < bytes.count, bytes[i] == UInt8(ascii: "<") else { throw fail("no root element") }
        let root = try element()
        try skipMisc()
        guard i == bytes.count else { throw fail("content after the root element") }
        return root
    }

    /// Whitespace, `<?…?>` and `<!--…-->` before or after the root.
    mutating func skipMisc() throws(S3XMLParseError) {
        while i < bytes.count {
            if isSpace(bytes[i]) {
                i += 1
            } else if starts("<?") {
                try skip(past: "?>")
            } else if starts("<!--") {
                try skip(past: "-->")
            } else {
                return
            }
        }
    }

    mutating func element() throws(S3XMLParseError) -> S3XMLElement {
        i += 1 // "<"
        let qualified = name()
        guard !qualified.isEmpty else { throw fail("an element without a name") }
        var result = S3XMLElement(name: String(qualified.split(separator: ":").last ?? Substring(qualified)))
        // Attributes are skipped (quoted values may hold ">").
        while true {
            guard i < bytes.count else { throw fail("unterminated tag <\(qualified)>") }
            let c = bytes[i]
            if c == UInt8(ascii: "/") {
                guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: ">") else { throw fail("bad tag end") }
                i += 2
                return result
            } else if c == UInt8(ascii: ">") {
                i += 1
                break
            } else if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                i += 1
                while i < bytes.count && bytes[i] != c { i += 1 }
                i += 1
            } else {
                i += 1
            }
        }
        var text: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("element <\(qualified)> is not closed") }
            if starts("</") {
                i += 2
                let closing = name()
                guard closing == qualified else { throw fail("</\(closing)> closes <\(qualified)>") }
                while i < bytes.count && isSpace(bytes[i]) { i += 1 }
                guard i < bytes.count, bytes[i] == UInt8(ascii: ">") else { throw fail("bad closing tag") }
                i += 1
                result.text = String(decoding: text, as: UTF8.self)
                return result
            } else if starts("<!--") {
                try skip(past: "-->")
            } else if starts("<![CDATA[") {
                i += 9
                let start = i
                try skip(past: "]]>")
                text += bytes[start..<(i - 3)]
            } else if bytes[i] == UInt8(ascii: "<") {
                result.children.append(try element())
            } else if bytes[i] == UInt8(ascii: "&") {
                text += try entity()
            } else {
                text.append(bytes[i])
                i += 1
            }
        }
    }

    mutating func entity() throws(S3XMLParseError) -> [UInt8] {
        guard let end = bytes[i...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { throw fail("bad entity") }
        let body = String(decoding: bytes[(i + 1)..<end], as: UTF8.self)
        i = end + 1
        switch body {
        case "amp": return Array("&".utf8)
        case "lt": return Array("<".utf8)
        case "gt": return Array(">".utf8)
        case "quot": return Array("\"".utf8)
        case "apos": return Array("'".utf8)
        default:
            let value: UInt32?
            if body.hasPrefix("#x") || body.hasPrefix("#X") {
                value = UInt32(body.dropFirst(2), radix: 16)
            } else if body.hasPrefix("#") {
                value = UInt32(body.dropFirst(), radix: 10)
            } else {
                value = nil
            }
            guard let value, let scalar = Unicode.Scalar(value) else { throw fail("unknown entity &\(body);") }
            return Array(String(Character(scalar)).utf8)
        }
    }

    mutating func name() -> String {
        let start = i
        while i < bytes.count, !isSpace(bytes[i]), bytes[i] != UInt8(ascii: ">"), bytes[i] != UInt8(ascii: "/") {
            i += 1
        }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    func starts(_ text: String) -> Bool {
        let pattern = Array(text.utf8)
        return i + pattern.count <= bytes.count && bytes[i..<(i + pattern.count)].elementsEqual(pattern)
    }

    mutating func skip(past text: String) throws(S3XMLParseError) {
        while i < bytes.count {
            if starts(text) {
                i += text.utf8.count
                return
            }
            i += 1
        }
        throw fail("missing \(text)")
    }

    func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

    func fail(_ reason: String) -> S3XMLParseError { S3XMLParseError(reason: reason, offset: i) }
}

/// Writes the few request documents the client sends (CompleteMultipartUpload).
enum S3XMLWriter {
    /// `text` with `&`, `<`, `>`, `"` and `'` escaped.
    static func escape(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }
}
