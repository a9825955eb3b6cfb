// `blobstream ls -l` (GNU tar -tv's layout) and `ls --json` (one JSON document).

import BlobStream
import BlobStreamArchive
import Foundation

/// Writes entries as `tar -tv` does: `MODE OWNER/GROUP SIZE YYYY-MM-DD HH:MM NAME`, the
/// type letter from the tar header's type flag when the listing read it (`C` for a
/// contiguous file, `?` for a type GNU tar does not know), the owner and group by name when
/// the header has one (else by id), the size right-aligned in a column that widens as GNU
/// tar's does (`MAJOR,MINOR` for a device), the time in the local time zone (`TZ`), and the
/// name spelled as GNU tar spells it in a UTF-8 locale (`--quoting-style=escape`: `\\`,
/// `\n`, `\t`, …, and `\ooo` for other control bytes and bytes that are not UTF-8);
/// ` -> TARGET` after a symbolic link, ` link to TARGET` after a hard link.
struct TarStyleListing {
    /// GNU tar's `ugswidth`: the width of `OWNER/GROUP SIZE`, grown by the widest so far.
    private var ownerSizeWidth = 19
    private let dateFormatter: DateFormatter = {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone.current
        f.dateFormat = "yyyy-MM-dd HH:mm"
        return f
    }()

    /// The line (with its newline) for `entry`.
    mutating func line(_ entry: ArchiveEntry) -> String {
        let owner = entry.ownership.map { $0.owner ?? String($0.uid) } ?? "?"
        let group = entry.ownership.map { $0.group ?? String($0.gid) } ?? "?"
        let size = entry.device.map { "\($0.major),\($0.minor)" } ?? String(entry.size ?? 0)
        let used = owner.utf8.count + 1 + group.utf8.count + 1 + size.utf8.count
        ownerSizeWidth = max(ownerSizeWidth, used)
        let padding = String(repeating: " ", count: ownerSizeWidth - used)
        let date = entry.mtime.map { dateFormatter.string(from: $0) } ?? "????-??-?? ??:??"
        var text =
            "\(Self.modeString(entry.type, entry.permissions, tarTypeFlag: entry.tarTypeFlag)) \(owner)/\(group) \(padding)\(size) \(date) "
            + Self.quoted(entry.pathBytes)
        if let target = entry.linkTarget {
            let quotedTarget = Self.quoted(Array(target.utf8))
            if entry.type == .symbolicLink { text += " -> " + quotedTarget }
            if entry.type == .hardLink { text += " link to " + quotedTarget }
        }
        return text + "\n"
    }

    /// `-rw-r--r--`: the type letter GNU tar uses (from the tar header's type flag when
    /// known), then rwx for owner, group and others with setuid, setgid and sticky as
    /// `s`/`S`, `s`/`S`, `t`/`T`.
    static func modeString(_ type: ArchiveEntry.EntryType, _ permissions: UInt32?, tarTypeFlag: UInt8? = nil) -> String
    {
        let letter = tarTypeFlag.map { tarLetter($0, type) } ?? typeLetter(type)
        guard let p = permissions else { return String(letter) + "?????????" }
        func triple(_ shift: UInt32, special: UInt32, on: Character, off: Character) -> String {
            let r: Character = p & (0o4 << shift) != 0 ? "r" : "-"
            let w: Character = p & (0o2 << shift) != 0 ? "w" : "-"
            let executable = p & (0o1 << shift) != 0
            let x: Character = p & special != 0 ? (executable ? on : off) : (executable ? "x" : "-")
            return String([r, w, x])
        }
        return String(letter) + triple(6, special: 0o4000, on: "s", off: "S")
            + triple(3, special: 0o2000, on: "s", off: "S") + triple(0, special: 0o1000, on: "t", off: "T")
    }

    /// The letter for an entry's type when no tar type flag is known.
    private static func typeLetter(_ type: ArchiveEntry.EntryType) -> Character {
        switch type {
        case .file: "-"
        case .directory: "d"
        case .symbolicLink: "l"
        case .hardLink: "h"
        case .characterDevice: "c"
        case .blockDevice: "b"
        case .fifo: "p"
        case .socket: "s"
        case .unknown: "?"
        }
    }

    /// GNU tar's letter for a header's type flag (`list.c`): a regular file's is `d` when
    /// its name ends with `/` (the entry is then a directory).
    private static func tarLetter(_ flag: UInt8, _ type: ArchiveEntry.EntryType) -> Character {
        switch flag {
        case 0, UInt8(ascii: "0"), UInt8(ascii: "S"): type == .directory ? "d" : "-"
        case UInt8(ascii: "1"): "h"
        case UInt8(ascii: "2"): "l"
        case UInt8(ascii: "3"): "c"
        case UInt8(ascii: "4"): "b"
        case UInt8(ascii: "5"), UInt8(ascii: "D"): "d"
        case UInt8(ascii: "6"): "p"
        case UInt8(ascii: "7"): "C"
        case UInt8(ascii: "V"): "V"
        case UInt8(ascii: "M"): "M"
        default: "?"
        }
    }

    /// A name as GNU tar's default quoting (`escape`) spells it in a UTF-8 locale.
    static func quoted(_ bytes: [UInt8]) -> String {
        var out = ""
        func octal(_ b: UInt8) { out += "\\" + String(b >> 6) + String((b >> 3) & 7) + String(b & 7) }
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b < 0x80 {
                switch b {
                case 0x07: out += "\\a"
                case 0x08: out += "\\b"
                case 0x09: out += "\\t"
                case 0x0A: out += "\\n"
                case 0x0B: out += "\\v"
                case 0x0C: out += "\\f"
                case 0x0D: out += "\\r"
                case UInt8(ascii: "\\"): out += "\\\\"
                case 0..<0x20, 0x7F: octal(b)
                default: out.unicodeScalars.append(Unicode.Scalar(b))
                }
                i += 1
                continue
            }
            let length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1
            let text =
                length > 1 && i + length <= bytes.count ? String(validating: bytes[i..<i + length], as: UTF8.self) : nil
            guard let text else {
                octal(b) // not UTF-8: the byte in octal, as tar does
                i += 1
                continue
            }
            if let scalar = text.unicodeScalars.first, (0x80...0x9F).contains(scalar.value) {
                for k in i..<i + length { octal(bytes[k]) } // a C1 control
            } else {
                out += text
            }
            i += length
        }
        return out
    }
}

/// One member in `ls --json`.
struct JSONListedEntry: Encodable {
    /// The archive as given on the command line.
    var archive: String
    /// The name as UTF-8 (bytes that are not UTF-8 as U+FFFD).
    var path: String
    /// The name as `archive:` URLs and `ARCHIVE!/member` take it (`%XX` escapes).
    var escapedPath: String
    var type: String
    var size: Int64?
    /// Permission bits in octal, `"0644"`.
    var mode: String?
    /// `-rw-r--r--`.
    var modeString: String?
    /// ISO 8601, UTC.
    var mtime: String?
    var uid: Int64?
    var gid: Int64?
    var owner: String?
    var group: String?
    var linkTarget: String?

    init(archive: String, _ e: ArchiveEntry) {
        self.archive = archive
        path = e.path
        escapedPath = e.escapedPath
        type = e.type.description
        size = e.size
        mode = e.permissions.map { p in
            let digits = String(p, radix: 8)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
        modeString = e.permissions.map { TarStyleListing.modeString(e.type, $0, tarTypeFlag: e.tarTypeFlag) }
        mtime = e.mtime.map(List.iso)
        uid = e.ownership?.uid
        gid = e.ownership?.gid
        owner = e.ownership?.owner
        group = e.ownership?.group
        linkTarget = e.linkTarget
    }

    /// The document: an array of members, keys sorted, one member per line.
    static func document(_ entries: [JSONListedEntry]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let rows = try entries.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
        return rows.isEmpty ? "[]\n" : "[\n" + rows.joined(separator: ",\n") + "\n]\n"
    }
}
