// The lines of `sha256sum` and its siblings (GNU coreutils), written and read back.

/// One line of a checksum list in GNU coreutils' format: `HEX␠␠NAME` (`HEX␠*NAME` marks
/// binary mode, which is the same on POSIX; `HEX␠NAME` is read too, as `sha256sum -c`
/// reads it). A name holding a backslash, a newline or a
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

    /// How the untagged lines of a `--check` run separate the digest from the name, as
    /// `sha256sum -c` settles it: the first such line decides for the rest of the run (every
    /// list). `HEX␠␠NAME` / `HEX␠*NAME` (a blank, then a mode character) makes the one-blank
    /// form a misformatted line afterwards; `HEX␠NAME` makes what follows the blank all name,
    /// so that a name starting with a space or `*` cannot be read two ways.
    enum Separator {
        /// No untagged line read yet.
        case undecided
        /// A blank (space or tab) and a mode character (space or `*`).
        case modeCharacter
        /// One blank.
        case singleBlank
    }

    /// Reads one line of a list (without its newline), as `sha256sum -c` does: after any
    /// leading blanks (and a `\` that marks an escaped name), the digest of `hexLength` hex
    /// digits (either case), a blank (space or tab), a mode character (space or `*`, binary
    /// mode, the same on POSIX) or none (`HEX␠NAME`, see `Separator`, which `separator`
    /// carries from line to line), and the name; or the BSD form `--tag` writes,
    /// `TAG (NAME) = HEX`. Nil when the line is in neither form.
    init?(parsing line: Substring, hexLength: Int, tag: String, separator: inout Separator) {
        var line = line
        if line.hasSuffix("\r") { line = line.dropLast() }
        while line.first == " " || line.first == "\t" { line = line.dropFirst() }
        let escaped = line.hasPrefix("\\")
        if escaped { line = line.dropFirst() }
        func isHex(_ text: Substring.UnicodeScalarView) -> Bool {
            text.count == hexLength && text.allSatisfy { $0.isASCII && Character($0).isHexDigit }
        }
        let hex: Substring.UnicodeScalarView
        let rawName: Substring.UnicodeScalarView
        if line.hasPrefix(tag + " ("), let close = line.range(of: ") = ", options: .backwards),
            isHex(line[close.upperBound...].unicodeScalars)
        {
            hex = line[close.upperBound...].unicodeScalars
            rawName = line[line.index(line.startIndex, offsetBy: tag.count + 2)..<close.lowerBound].unicodeScalars
        } else {
            let scalars = line.unicodeScalars
            hex = scalars.prefix(hexLength)
            guard isHex(hex) else { return nil }
            var rest = scalars.dropFirst(hexLength)
            guard rest.first == " " || rest.first == "\t" else { return nil }
            rest = rest.dropFirst()
            guard !rest.isEmpty else { return nil }
            if rest.count > 1 && (rest.first == " " || rest.first == "*") {
                // A mode character, unless the run settled on one blank: then it is the
                // name's first character.
                if separator != .singleBlank {
                    separator = .modeCharacter
                    rest = rest.dropFirst()
                }
            } else {
                guard separator != .modeCharacter else { return nil }
                separator = .singleBlank
            }
            rawName = rest
        }
        let text = Substring(rawName)
        guard !text.isEmpty, let name = escaped ? Self.unescaped(text) : String(text) else { return nil }
        self.hex = String(Substring(hex)).lowercased()
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
