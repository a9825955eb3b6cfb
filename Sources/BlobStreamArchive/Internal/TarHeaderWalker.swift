import BlobStream
import Foundation

/// One entry of an uncompressed tar, as `TarHeaderWalker` found it: where its headers and
/// its bytes are, and what its (extension) headers say.
struct TarWalkEntry {
    /// Offset of the first header of the entry's chain (a pax `x` or GNU `L`/`K` header
    /// before the entry's own header counts).
    var headerOffset: Int64
    /// Offset of the entry's first data byte (right after its own header).
    var dataOffset: Int64
    /// Bytes of data stored after the header.
    var size: Int64
    /// The stored name (a pax `path`, a GNU long name, or the ustar prefix and name).
    var nameBytes: [UInt8]
    /// A link's target (pax `linkpath`, GNU long link, or the header's field); empty if none.
    var linkBytes: [UInt8]
    var type: ArchiveEntry.EntryType
    /// The permission bits (`mode & 0o7777`).
    var mode: UInt32
    var mtimeSeconds: Int64
    var mtimeNanoseconds: Int32
    /// Offset of the next entry's header.
    var next: Int64

    /// The entry as `ArchiveListing` describes it (libarchive gives the same).
    var archiveEntry: ArchiveEntry {
        let link = String(decoding: linkBytes, as: UTF8.self)
        return ArchiveEntry(
            path: String(decoding: nameBytes, as: UTF8.self), size: size, type: type,
            mtime: Date(timeIntervalSince1970: Double(mtimeSeconds) + Double(mtimeNanoseconds) / 1e9),
            linkTarget: type == .hardLink || type == .symbolicLink ? link : nil, pathBytes: nameBytes)
    }
}

/// A failure met while walking: what was wrong and where. `code` is `.corrupt`,
/// `.truncated`, or the upstream's own code (`cause` then holds its error).
struct TarWalkError: Error {
    var code: BlobStreamError.Code
    var message: String
    var cause: (any Error)?
}

/// Walks the headers of an uncompressed tar read from a seekable upstream: reads each
/// 512-byte header where it is, verifies its checksum, and moves over the entry's data by
/// offset arithmetic (nothing of a member's body is read). Knows ustar (with its prefix),
/// GNU tar (`L` long names, `K` long link names) and pax (`x` records `path`, `linkpath`,
/// `size`, `mtime`; `g` global headers that set none of these). Everything else — sparse
/// members (GNU `S`, pax `GNU.sparse.*`), multi-volume (`M`), volume labels (`V`), dump
/// directories (`D`), a global `path`/`size`, odd sizes on links or directories — is
/// `.unsupported`: the caller then lets libarchive read the archive (it stays the
/// reference).
struct TarHeaderWalker {
    /// What the next step found.
    enum Step {
        case entry(TarWalkEntry)
        /// A zero block or the upstream's end at a header boundary.
        case end
        /// Something this walker does not handle (why).
        case unsupported(String)
    }

    /// Largest extension header data read (a pax or long-name header larger than this is
    /// left to libarchive).
    static let maximumExtensionSize = 64 * 1024

    /// Where the bytes come from: a seekable upstream (`reader`), or bytes handed out in
    /// increasing order of offset (`input`: a tar inflated while it is read).
    let reader: BlobUpstreamReader?
    let input: (any SequentialTarBytes)?
    let length: Int64
    /// Offset of the next header.
    var offset: Int64

    init(reader: BlobUpstreamReader, length: Int64, offset: Int64 = 0) {
        self.reader = reader
        self.input = nil
        self.length = length
        self.offset = offset
    }

    /// A walker over bytes that `input` hands out in increasing order of offset (their
    /// length unknown: `input` says where they end).
    init(input: any SequentialTarBytes) {
        self.reader = nil
        self.input = input
        self.length = Int64.max
        self.offset = 0
    }

    /// Whether the 512 bytes at offset 0 of `reader` are a tar header with a right checksum
    /// (what decides whether to walk at all).
    static func startsWithTarHeader(_ reader: BlobUpstreamReader, length: Int64) -> Bool {
        guard length >= 512, (try? reader.seek(to: 0)) != nil else { return false }
        guard case .bytes(let bytes) = reader.fill(atLeast: 512, waiting: true), bytes.count >= 512 else {
            return false
        }
        let header = UnsafeRawBufferPointer(rebasing: bytes[0..<512])
        return !header.allSatisfy { $0 == 0 } && TarHeaderFields.checksumMatches(header)
    }

    /// Whether the first header carries the ustar magic (`ustar`), whatever its checksum:
    /// a tar whose first header is damaged, which the walk then reports.
    static func hasUstarMagic(_ reader: BlobUpstreamReader, length: Int64) -> Bool {
        guard length >= 512, (try? reader.seek(to: 0)) != nil else { return false }
        guard case .bytes(let bytes) = reader.fill(atLeast: 512, waiting: true), bytes.count >= 512 else {
            return false
        }
        return bytes[257..<262].elementsEqual("ustar".utf8)
    }

    /// Reads the next entry (its extension headers, then its own header).
    mutating func next() throws(TarWalkError) -> Step {
        var paxPath: [UInt8]?
        var paxLink: [UInt8]?
        var paxSize: Int64?
        var paxMtime: (Int64, Int32)?
        var longName: [UInt8]?
        var longLink: [UInt8]?
        let chainStart = offset
        var pendingExtension = false
        while true {
            if offset == length && !pendingExtension { return .end }
            let header = try bytes(at: offset, count: 512, what: "a header")
            if header.allSatisfy({ $0 == 0 }) {
                if pendingExtension {
                    return .unsupported("an extension header at offset \(chainStart) is followed by the end marker")
                }
                return .end
            }
            guard TarHeaderFields.checksumMatches(header) else {
                throw TarWalkError(code: .corrupt, message: "the header checksum is wrong at offset \(offset)")
            }
            // Solaris tar's `X` is a pax extended header under an older letter (GNU tar and
            // libarchive read it as `x`).
            let flag = header[156] == UInt8(ascii: "X") ? UInt8(ascii: "x") : header[156]
            guard let headerSize = TarHeaderFields.number(header, 124, 12), headerSize >= 0 else {
                throw TarWalkError(
                    code: .corrupt, message: "the header at offset \(offset) has a size that is not a number")
            }
            let dataOffset = offset + 512
            switch flag {
            case UInt8(ascii: "x"), UInt8(ascii: "g"), UInt8(ascii: "L"), UInt8(ascii: "K"):
                guard headerSize <= Self.maximumExtensionSize else {
                    return .unsupported("an extension header of \(headerSize) bytes at offset \(offset)")
                }
                let data = Array(try bytes(at: dataOffset, count: Int(headerSize), what: "an extension header's data"))
                offset = dataOffset + Self.padded(headerSize)
                pendingExtension = true
                if flag == UInt8(ascii: "L") || flag == UInt8(ascii: "K") {
                    let value = Array(data.prefix { $0 != 0 })
                    if flag == UInt8(ascii: "L") { longName = value } else { longLink = value }
                    continue
                }
                let records = try Self.paxRecords(data, at: dataOffset)
                for (key, value) in records {
                    if key.hasPrefix("GNU.sparse") { return .unsupported("a pax sparse member") }
                    guard flag == UInt8(ascii: "x") else {
                        if key == "path" || key == "linkpath" || key == "size" {
                            return .unsupported("a pax global header that sets '\(key)'")
                        }
                        continue
                    }
                    switch key {
                    case "path": paxPath = value
                    case "linkpath": paxLink = value
                    case "size":
                        guard let size = Int64(String(decoding: value, as: UTF8.self)), size >= 0 else {
                            throw TarWalkError(
                                code: .corrupt, message: "the pax header at offset \(dataOffset - 512) has a bad size")
                        }
                        paxSize = size
                    case "mtime": paxMtime = Self.paxTime(value)
                    default: break
                    }
                }
                continue
            default: break
            }
            var type: ArchiveEntry.EntryType
            switch flag {
            case 0, UInt8(ascii: "0"), UInt8(ascii: "7"): type = .file
            case UInt8(ascii: "1"): type = .hardLink
            case UInt8(ascii: "2"): type = .symbolicLink
            case UInt8(ascii: "3"): type = .characterDevice
            case UInt8(ascii: "4"): type = .blockDevice
            case UInt8(ascii: "5"): type = .directory
            case UInt8(ascii: "6"): type = .fifo
            default: return .unsupported("an entry of type '\(Character(Unicode.Scalar(flag)))' at offset \(offset)")
            }
            let isPosix = header[257..<263].elementsEqual("ustar\0".utf8)
            var name = longName ?? paxPath ?? TarHeaderFields.string(header, 0, 100)
            if longName == nil && paxPath == nil && isPosix {
                let prefix = TarHeaderFields.string(header, 345, 155)
                if !prefix.isEmpty { name = prefix + [UInt8(ascii: "/")] + name }
            }
            // Old tars (v7) store a directory as a regular file whose name ends with '/'.
            if type == .file && flag != UInt8(ascii: "7") && name.last == UInt8(ascii: "/") { type = .directory }
            let size = paxSize ?? headerSize
            if type != .file && size != 0 {
                return .unsupported("a \(type) entry with \(size) bytes of data at offset \(offset)")
            }
            let link = longLink ?? paxLink ?? TarHeaderFields.string(header, 157, 100)
            let mode = UInt32(truncatingIfNeeded: (TarHeaderFields.number(header, 100, 8) ?? 0) & 0o7777)
            let mtime = paxMtime ?? (TarHeaderFields.number(header, 136, 12) ?? 0, 0)
            let entry = TarWalkEntry(
                headerOffset: chainStart, dataOffset: dataOffset, size: size, nameBytes: name,
                linkBytes: type == .hardLink || type == .symbolicLink ? link : [], type: type, mode: mode,
                mtimeSeconds: mtime.0, mtimeNanoseconds: mtime.1, next: dataOffset + Self.padded(size))
            offset = entry.next
            return .entry(entry)
        }
    }

    /// `size` rounded up to whole 512-byte blocks.
    static func padded(_ size: Int64) -> Int64 { (size + 511) / 512 * 512 }

    /// Lends `count` bytes at `at` (valid until the next read), or throws `.truncated`.
    private func bytes(at position: Int64, count: Int, what: String) throws(TarWalkError) -> UnsafeRawBufferPointer {
        if count == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
        if let input { return try input.bytes(at: position, count: count, what: what) }
        guard let reader, position + Int64(count) <= length else {
            throw TarWalkError(
                code: .truncated,
                message: "the archive is truncated: it ends at offset \(length), inside \(what) at offset \(position)")
        }
        do {
            try reader.seek(to: position)
        } catch {
            throw TarWalkError(code: error.code, message: "cannot move to offset \(position)", cause: error)
        }
        switch reader.fill(atLeast: count, waiting: true) {
        case .bytes(let bytes) where bytes.count >= count:
            return UnsafeRawBufferPointer(rebasing: bytes[0..<count])
        case .bytes, .end:
            throw TarWalkError(
                code: .truncated, message: "the archive is truncated: it ends inside \(what) at offset \(position)")
        case .starved:
            throw TarWalkError(code: .sourceFailed, message: "the upstream had nothing at offset \(position)")
        case .failed(let error):
            let code = (error as? BlobStreamError)?.code ?? .sourceFailed
            throw TarWalkError(code: code, message: "the upstream failed at offset \(position)", cause: error)
        }
    }

    /// Splits pax records (`"%d %s=%s\n"`) into keys and raw values.
    static func paxRecords(_ data: [UInt8], at position: Int64) throws(TarWalkError) -> [(String, [UInt8])] {
        var records: [(String, [UInt8])] = []
        var i = 0
        while i < data.count {
            if data[i] == 0 { break } // padding some writers leave
            var j = i
            var length = 0
            while j < data.count, data[j] >= UInt8(ascii: "0"), data[j] <= UInt8(ascii: "9"), length < 1 << 20 {
                length = length * 10 + Int(data[j] - UInt8(ascii: "0"))
                j += 1
            }
            guard j < data.count, data[j] == UInt8(ascii: " "), length > j - i + 1, i + length <= data.count,
                data[i + length - 1] == UInt8(ascii: "\n"),
                let equals = data[(j + 1)..<(i + length - 1)].firstIndex(of: UInt8(ascii: "="))
            else {
                throw TarWalkError(
                    code: .corrupt, message: "a pax record at offset \(position + Int64(i)) is malformed")
            }
            records.append(
                (String(decoding: data[(j + 1)..<equals], as: UTF8.self), Array(data[(equals + 1)..<(i + length - 1)])))
            i += length
        }
        return records
    }

    /// A pax time: seconds, optionally with a fraction (`1700000000.123456789`).
    static func paxTime(_ value: [UInt8]) -> (Int64, Int32)? {
        let text = String(decoding: value, as: UTF8.self)
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let seconds = Int64(parts[0]) else { return nil }
        guard parts.count == 2 else { return (seconds, 0) }
        let digits = String(parts[1].prefix(9)).padding(toLength: 9, withPad: "0", startingAt: 0)
        guard let nanos = Int32(digits), nanos > 0 else { return (seconds, 0) }
        // A negative time with a fraction counts down: -1.5 is -2 s + 0.5 s.
        return parts[0].hasPrefix("-") ? (seconds - 1, 1_000_000_000 - nanos) : (seconds, nanos)
    }
}

/// Bytes for a `TarHeaderWalker` that come in increasing order of offset (a tar being
/// inflated): asked for at an offset at or after the last one asked for.
protocol SequentialTarBytes: AnyObject {
    /// Lends `count` bytes at `position` (valid until the next call), or throws
    /// `.truncated` (the bytes end before), naming `what` was being read.
    func bytes(at position: Int64, count: Int, what: String) throws(TarWalkError) -> UnsafeRawBufferPointer
}

/// Reading the fields of a 512-byte tar header.
enum TarHeaderFields {
    /// The stored checksum (octal at 148, 8 bytes) equals the sum of the header's bytes with
    /// that field counted as spaces, as unsigned bytes or (old writers) signed ones.
    static func checksumMatches(_ header: UnsafeRawBufferPointer) -> Bool {
        guard let stored = number(header, 148, 8) else { return false }
        // The sums of all 512 bytes, then the field's 8 bytes counted as spaces instead.
        var unsigned: Int64 = 0
        var signed: Int64 = 0
        for byte in header {
            unsigned &+= Int64(byte)
            signed &+= Int64(Int8(bitPattern: byte))
        }
        for i in 148..<156 {
            unsigned -= Int64(header[i])
            signed -= Int64(Int8(bitPattern: header[i]))
        }
        return stored == unsigned + 8 * 32 || stored == signed + 8 * 32
    }

    /// A numeric field: octal digits (leading spaces or NULs, ending at a space or NUL), or
    /// GNU's base-256 (first byte's high bit set); nil when neither, or negative.
    static func number(_ header: UnsafeRawBufferPointer, _ start: Int, _ count: Int) -> Int64? {
        let first = header[start]
        if first & 0x80 != 0 {
            guard first == 0x80, count <= 12 else { return nil } // negative or absurd
            var value: Int64 = 0
            for i in (start + 1)..<(start + count) {
                guard value < Int64.max >> 8 else { return nil }
                value = value << 8 | Int64(header[i])
            }
            return value
        }
        var i = start
        let end = start + count
        while i < end, header[i] == UInt8(ascii: " ") || header[i] == 0 { i += 1 }
        var value: Int64 = 0
        while i < end, header[i] >= UInt8(ascii: "0"), header[i] <= UInt8(ascii: "7") {
            guard value < Int64.max >> 3 else { return nil }
            value = value * 8 + Int64(header[i] - UInt8(ascii: "0"))
            i += 1
        }
        if i < end, header[i] != UInt8(ascii: " "), header[i] != 0 { return nil }
        return value
    }

    /// A NUL-terminated (or full) text field's bytes.
    static func string(_ header: UnsafeRawBufferPointer, _ start: Int, _ count: Int) -> [UInt8] {
        Array(header[start..<(start + count)].prefix { $0 != 0 })
    }
}
