// The lines of `sha256sum` and its siblings (GNU coreutils), written and read back.

/// One line of a checksum list in GNU coreutils' format: `HEX␠␠NAME` (`HEX␠*NAME` marks
/// binary mode, which is the same on POSIX). A name holding a backslash, a newline or a
/// carriage return is escaped (`\\`, `\n`, `\r`) and the line then starts with `\`, so
/// that each line names one file whatever its name holds; other bytes are written as they
/// are (a tab, a space, bytes that are not UTF-8).
struct ChecksumLine: Equatable {
    var hex: String
    var name: String

    /// The line (with its newline) that `sha256sum NAME` prints.
    var text: String {
        let escape = name.unicodeScalars.contains { $0 == "\\" || $0 == "\n" || $0 == "\r" }
        return (escape ? "\\" : "") + hex + "  " + Self.spelled(name, escaped: escape) + "\n"
    }

    /// How `sha256sum -c` names a file in its `NAME: OK` lines: escaped (and after a `\`)
    /// only when the name holds a newline.
    static func checkedName(_ name: String) -> String {
        let escape = name.unicodeScalars.contains("\n")
        return (escape ? "\\" : "") + spelled(name, escaped: escape)
    }

    private static func spelled(_ name: String, escaped: Bool) -> String {
        guard escaped else { return name }
        var out = ""
        for c in name.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// Reads one line of a list (without its newline), as `sha256sum -c` does: the digest
    /// of `hexLength` hex digits (either case), a space, a space or `*`, and the name; or
    /// the BSD form `--tag` writes, `TAG (NAME) = HEX`. Nil when the line is in neither form.
    init?(parsing line: Substring, hexLength: Int, tag: String) {
        var line = line
        if line.hasSuffix("\r") { line = line.dropLast() }
        let escaped = line.hasPrefix("\\")
        if escaped { line = line.dropFirst() }
        func isHex(_ text: Substring) -> Bool {
            text.count == hexLength && text.allSatisfy { $0.isASCII && $0.isHexDigit }
        }
        let hex: Substring
        let rawName: Substring
        if line.hasPrefix(tag + " ("), let close = line.range(of: ") = ", options: .backwards),
            isHex(line[close.upperBound...])
        {
            hex = line[close.upperBound...]
            rawName = line[line.index(line.startIndex, offsetBy: tag.count + 2)..<close.lowerBound]
        } else {
            hex = line.prefix(hexLength)
            guard isHex(hex) else { return nil }
            let rest = line.dropFirst(hexLength)
            guard rest.first == " ", let mode = rest.dropFirst().first, mode == " " || mode == "*" else { return nil }
            rawName = rest.dropFirst(2)
        }
        guard !rawName.isEmpty, let name = escaped ? Self.unescaped(rawName) : String(rawName) else { return nil }
        self.hex = hex.lowercased()
        self.name = name
    }

    /// A name as GNU escapes it (`\\`, `\n`, `\r`) read back; nil for any other escape.
    private static func unescaped(_ text: Substring) -> String? {
        var name = ""
        var chars = text.unicodeScalars.makeIterator()
        while let c = chars.next() {
            guard c == "\\" else {
                name.unicodeScalars.append(c)
                continue
            }
            switch chars.next() {
            case "\\": name += "\\"
            case "n": name += "\n"
            case "r": name += "\r"
            default: return nil
            }
        }
        return name
    }

    init(hex: String, name: String) {
        self.hex = hex
        self.name = name
    }
}
