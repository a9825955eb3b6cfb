import Foundation

/// Writes a ustar archive by hand, so that a test controls every byte of a member's name:
/// newlines, escape sequences, latin-1 bytes that are not UTF-8 (as old tar archives hold
/// them), which tools that insist on UTF-8 names would refuse or rewrite.
struct TarWriter {
    enum Kind: UInt8 {
        case file = 0x30 // '0'
        case symlink = 0x32 // '2'
        case directory = 0x35 // '5'
        /// Solaris tar's pax extended header, under its pre-POSIX letter.
        case solarisExtended = 0x58 // 'X'
    }

    private(set) var bytes = Data()

    /// Appends a member: `name` (at most 100 bytes, raw), its content, its kind.
    mutating func add(name: [UInt8], content: Data = Data(), kind: Kind = .file, linkTarget: String = "") {
        precondition(name.count <= 100 && !name.contains(0), "a ustar name field holds 100 bytes, no NUL")
        var header = [UInt8](repeating: 0, count: 512)
        func put(_ field: [UInt8], at offset: Int) {
            header.replaceSubrange(offset..<offset + field.count, with: field)
        }
        func octal(_ value: Int, width: Int) -> [UInt8] {
            Array(String(value, radix: 8).leftPadded(to: width - 1).utf8) + [0]
        }
        put(name, at: 0)
        put(octal(kind == .directory ? 0o755 : 0o644, width: 8), at: 100)
        put(octal(0, width: 8), at: 108)
        put(octal(0, width: 8), at: 116)
        put(octal(kind == .file || kind == .solarisExtended ? content.count : 0, width: 12), at: 124)
        put(octal(1_700_000_000, width: 12), at: 136)
        put(Array(repeating: UInt8(ascii: " "), count: 8), at: 148) // checksum counted as spaces
        header[156] = kind.rawValue
        put(Array(linkTarget.utf8), at: 157)
        put(Array("ustar\u{0}00".utf8), at: 257)
        put(Array("root".utf8), at: 265)
        put(Array("root".utf8), at: 297)
        let sum = header.reduce(0) { $0 + Int($1) }
        put(Array(String(sum, radix: 8).leftPadded(to: 6).utf8) + [0, UInt8(ascii: " ")], at: 148)
        bytes.append(contentsOf: header)
        if kind == .file || kind == .solarisExtended {
            bytes.append(content)
            bytes.append(Data(count: (512 - content.count % 512) % 512))
        }
    }

    /// The archive with its end (two zero blocks).
    var archive: Data { bytes + Data(count: 1024) }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
