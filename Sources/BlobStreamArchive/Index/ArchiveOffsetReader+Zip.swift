import BlobStream
import BlobStreamCompression
import Foundation

// A zip's central directory (with zip64), read for an `ArchiveIndex` or to find one member
// (a zip's own index: no `.blobidx` needed): each entry's name, sizes, CRC-32, method,
// attributes and time, and (from its local header, which must agree) where its bytes start.

/// One entry of a zip's central directory, as the directory gives it (zip64 sizes and
/// offset applied).
struct ZipDirectoryEntry {
    /// Where the entry starts in the archive (in the central directory).
    var entryOffset: Int64
    var nameBytes: [UInt8]
    var madeBy: UInt16
    var flags: UInt16
    var method: UInt16
    var crc: UInt32
    var compressedSize: Int64
    var size: Int64
    var localHeaderOffset: Int64
    var external: UInt32
    /// The MS-DOS date and time, and the extended timestamp's seconds when there is one.
    var dosDate: UInt16
    var dosTime: UInt16
    var unixTime: Int64?

    /// Seconds since 1970: the extended timestamp, else the MS-DOS time (local time). Made
    /// only for the member read: `mktime` looks at the time zone file on every call.
    var modificationSeconds: Int64 {
        unixTime ?? ArchiveOffsetReader.dosTime(date: dosDate, time: dosTime)
    }

    /// What the entry is: from its Unix mode when a Unix system made it, else from its name.
    var type: ArchiveEntry.EntryType {
        switch madeBy >> 8 == 3 ? (external >> 16) & 0o170000 : 0 {
        case 0o040000: .directory
        case 0o120000: .symbolicLink
        case 0o100000: .file
        case 0: nameBytes.last == UInt8(ascii: "/") ? .directory : .file
        default: .unknown
        }
    }
}

extension ArchiveOffsetReader {
    /// The members of a zip; nil when the bytes end with no zip end-of-central-directory
    /// record.
    func zipMembers() throws(BlobStreamError) -> [ArchiveIndex.Member]? {
        guard let directory = try zipCentralDirectory() else { return nil }
        var members: [ArchiveIndex.Member] = []
        for entry in try zipEntries(directory) { members.append(try zipMember(entry)) }
        return members
    }

    /// The first member of the zip whose normalized name (see
    /// `ArchiveMemberDataSource.normalized`) is `wanted`, found in `directory` (from
    /// `zipCentralDirectory()`), its local header read and checked; nil when the directory
    /// lists none by that name.
    func zipMember(named wanted: [UInt8], in directory: ZipCentralDirectory) throws(BlobStreamError)
        -> ArchiveIndex.Member?
    {
        // Every entry's frame is checked (a directory cut short fails whatever is asked for),
        // the names compared in place: only the member found is parsed whole.
        let d = directory.bytes
        var p = 0
        var found: Int?
        for i in 0..<directory.count {
            guard p + 46 <= d.count, Self.u32(d, p) == 0x0201_4b50 else {
                throw corrupt(
                    "the central directory holds \(i) entries where its end record counts \(directory.count): it is damaged or cut short",
                    directory.offset + Int64(p))
            }
            let nameLength = Int(Self.u16(d, p + 28))
            let end = p + 46 + nameLength + Int(Self.u16(d, p + 30)) + Int(Self.u16(d, p + 32))
            guard end <= d.count else {
                throw corrupt("a central directory entry runs past its end", directory.offset + Int64(p))
            }
            if found == nil {
                let start = p + 46
                let matches = d.withUnsafeBufferPointer { all in
                    let name = UnsafeBufferPointer(rebasing: all[start..<(start + nameLength)])
                    return name[ArchiveMemberDataSource.normalizedBounds(name)].elementsEqual(wanted)
                }
                if matches { found = p }
            }
            p = end
        }
        guard var at = found else { return nil }
        return try zipMember(try zipEntry(d, &at, at: directory.offset))
    }

    /// Every entry of the central directory, in its order.
    func zipEntries(_ directory: ZipCentralDirectory) throws(BlobStreamError) -> [ZipDirectoryEntry] {
        var entries: [ZipDirectoryEntry] = []
        entries.reserveCapacity(Int(directory.count))
        var p = 0
        for i in 0..<directory.count {
            guard p + 46 <= directory.bytes.count, Self.u32(directory.bytes, p) == 0x0201_4b50 else {
                throw corrupt(
                    "the central directory holds \(i) entries where its end record counts \(directory.count): it is damaged or cut short",
                    directory.offset + Int64(p))
            }
            entries.append(try zipEntry(directory.bytes, &p, at: directory.offset))
        }
        return entries
    }

    /// A zip's central directory: its bytes, where it starts, and how many entries the end
    /// record counts; nil when the bytes end with no end-of-central-directory record.
    /// How much of a remote zip's end is asked for at first: the end record and, most often,
    /// the central directory.
    static let directoryGuess = 1 << 20

    func zipCentralDirectory() throws(BlobStreamError) -> ZipCentralDirectory? {
        let tailLength = Int(min(length, 22 + 65_535))
        guard tailLength >= 22 else { return nil }
        // Over a remote archive: the last MiB in one request, which most often holds the
        // central directory too (about 10,000 entries), so that it needs no second one.
        reader.expectRead(max(0, length - Int64(Self.directoryGuess))..<length)
        let tail = Array(try bytes(at: length - Int64(tailLength), count: tailLength, what: "the end of the archive"))
        var eocd: Int?
        var i = tailLength - 22
        while i >= 0 {
            if Self.u32(tail, i) == 0x0605_4b50, i + 22 + Int(Self.u16(tail, i + 20)) == tailLength {
                eocd = i
                break
            }
            i -= 1
        }
        guard let eocd else { return nil }
        let eocdOffset = length - Int64(tailLength) + Int64(eocd)
        var count = Int64(Self.u16(tail, eocd + 10))
        var directorySize = Int64(Self.u32(tail, eocd + 12))
        var directoryOffset = Int64(Self.u32(tail, eocd + 16))
        if count == 0xFFFF || directorySize == 0xFFFF_FFFF || directoryOffset == 0xFFFF_FFFF {
            // zip64: the locator sits right before the end record.
            let locator = Array(try bytes(at: eocdOffset - 20, count: 20, what: "the zip64 locator"))
            guard Self.u32(locator, 0) == 0x0706_4b50 else { throw corrupt("the zip64 locator is missing", eocdOffset) }
            let recordOffset = Int64(bitPattern: Self.u64(locator, 8))
            let record = Array(try bytes(at: recordOffset, count: 56, what: "the zip64 end record"))
            guard Self.u32(record, 0) == 0x0606_4b50 else {
                throw corrupt("the zip64 end record is damaged", recordOffset)
            }
            count = Int64(bitPattern: Self.u64(record, 32))
            directorySize = Int64(bitPattern: Self.u64(record, 40))
            directoryOffset = Int64(bitPattern: Self.u64(record, 48))
        }
        guard directoryOffset >= 0, directorySize >= 0, directoryOffset + directorySize <= eocdOffset,
            count >= 0, count <= directorySize / 46
        else {
            throw corrupt("the end record gives an impossible central directory (\(count) entries)", eocdOffset)
        }
        var directory: [UInt8] = []
        directory.reserveCapacity(Int(directorySize))
        var at = directoryOffset
        while at < directoryOffset + directorySize {
            let n = Int(min(directoryOffset + directorySize - at, Int64(LibArchiveInput.blockSize)))
            directory += try bytes(at: at, count: n, what: "the central directory")
            at += Int64(n)
        }
        return ZipCentralDirectory(bytes: directory, offset: directoryOffset, count: count)
    }

    /// The entry at `p` of the central directory (moves `p` past it).
    private func zipEntry(_ d: [UInt8], _ p: inout Int, at base: Int64) throws(BlobStreamError) -> ZipDirectoryEntry {
        let entryOffset = base + Int64(p)
        var compressed = Int64(Self.u32(d, p + 20))
        var size = Int64(Self.u32(d, p + 24))
        let nameLength = Int(Self.u16(d, p + 28))
        let extraLength = Int(Self.u16(d, p + 30))
        let commentLength = Int(Self.u16(d, p + 32))
        var local = Int64(Self.u32(d, p + 42))
        let end = p + 46 + nameLength + extraLength + commentLength
        guard end <= d.count else { throw corrupt("a central directory entry runs past its end", entryOffset) }
        var mtime: Int64?
        // Extra fields: zip64 sizes and offset (0x0001), extended timestamp (0x5455).
        var e = p + 46 + nameLength
        let extraEnd = e + extraLength
        while e + 4 <= extraEnd {
            let id = Self.u16(d, e)
            let n = Int(Self.u16(d, e + 2))
            guard e + 4 + n <= extraEnd else { break }
            var q = e + 4
            if id == 0x0001 {
                if size == 0xFFFF_FFFF, q + 8 <= e + 4 + n {
                    size = Int64(bitPattern: Self.u64(d, q))
                    q += 8
                }
                if compressed == 0xFFFF_FFFF, q + 8 <= e + 4 + n {
                    compressed = Int64(bitPattern: Self.u64(d, q))
                    q += 8
                }
                if local == 0xFFFF_FFFF, q + 8 <= e + 4 + n { local = Int64(bitPattern: Self.u64(d, q)) }
            } else if id == 0x5455, n >= 5, d[q] & 1 != 0 {
                mtime = Int64(Int32(bitPattern: Self.u32(d, q + 1)))
            }
            e += 4 + n
        }
        defer { p = end }
        return ZipDirectoryEntry(
            entryOffset: entryOffset, nameBytes: Array(d[(p + 46)..<(p + 46 + nameLength)]),
            madeBy: Self.u16(d, p + 4), flags: Self.u16(d, p + 8), method: Self.u16(d, p + 10),
            crc: Self.u32(d, p + 16), compressedSize: compressed, size: size, localHeaderOffset: local,
            external: Self.u32(d, p + 38), dosDate: Self.u16(d, p + 14), dosTime: Self.u16(d, p + 12),
            unixTime: mtime)
    }

    /// The member an entry describes: its local header read (it must agree with the entry:
    /// the signature, the name, the method, and unless a data descriptor follows the bytes,
    /// the CRC-32 and sizes), where its bytes start, and for a symbolic link its target.
    private func zipMember(_ entry: ZipDirectoryEntry) throws(BlobStreamError) -> ArchiveIndex.Member {
        let local = entry.localHeaderOffset
        let who = member == nil ? "member '\(BlobURL.escapedName(entry.nameBytes))': " : ""
        guard entry.compressedSize >= 0, entry.size >= 0 else {
            throw corrupt("\(who)the central directory gives impossible sizes", entry.entryOffset)
        }
        guard local >= 0, local + 30 <= length else {
            throw corrupt(
                "\(who)the central directory puts its local header at offset \(local), past the archive's end (\(length) bytes)",
                entry.entryOffset)
        }
        if member != nil {
            // One member read: its local header and its bytes in one request (the local
            // header's name and extra field are at most 2 × 64 KiB).
            reader.expectRead(local..<min(length, local + 30 + 2 * 65_535 + entry.compressedSize))
        }
        let header = Array(try bytes(at: local, count: 30, what: "a local header"))
        guard Self.u32(header, 0) == 0x0403_4b50 else {
            throw corrupt("\(who)no local header where the central directory puts it", local)
        }
        let nameLength = Int(Self.u16(header, 26))
        let dataOffset = local + 30 + Int64(nameLength) + Int64(Self.u16(header, 28))
        guard dataOffset + entry.compressedSize <= length else {
            throw corrupt(
                "\(who)its \(entry.compressedSize) stored bytes at offset \(dataOffset) go past the archive's end (\(length) bytes)",
                local)
        }
        let type = entry.type
        if entry.method == 0, entry.flags & 1 == 0, type == .file, entry.compressedSize != entry.size {
            throw corrupt(
                "\(who)it is stored, yet the central directory gives \(entry.compressedSize) stored bytes for \(entry.size)",
                entry.entryOffset)
        }
        if let disagreement = try localDisagreement(entry, header: header, nameLength: nameLength) {
            throw corrupt("\(who)the local header disagrees with the central directory: \(disagreement)", local)
        }
        var link: [UInt8] = []
        if type == .symbolicLink, entry.flags & 1 == 0, entry.compressedSize <= 4096 {
            let stored = Array(
                try bytes(at: dataOffset, count: Int(entry.compressedSize), what: "a symbolic link's target"))
            link = entry.method == 0 ? stored : (Self.rawInflate(stored, size: Int(min(entry.size, 4096))) ?? [])
        }
        let unix = entry.madeBy >> 8 == 3
        return ArchiveIndex.Member(
            nameBytes: entry.nameBytes, type: type, size: type == .file ? entry.size : 0,
            mode: unix ? (entry.external >> 16) & 0o7777 : (type == .directory ? 0o755 : 0o644),
            modificationSeconds: entry.modificationSeconds, modificationNanoseconds: 0, linkTargetBytes: link,
            headerOffset: local, dataOffset: dataOffset, crc32: type == .file ? entry.crc : nil,
            compressionMethod: entry.method, compressedSize: entry.compressedSize, isEncrypted: entry.flags & 1 != 0)
    }

    /// What a local header says that its central directory entry does not, or nil.
    private func localDisagreement(_ entry: ZipDirectoryEntry, header: [UInt8], nameLength: Int)
        throws(BlobStreamError) -> String?
    {
        let localName =
            nameLength == entry.nameBytes.count
            ? Array(try bytes(at: entry.localHeaderOffset + 30, count: nameLength, what: "a local header's name"))
            : nil
        if localName != entry.nameBytes {
            return "it names another member (\(nameLength) bytes of name, the directory's \(entry.nameBytes.count))"
        }
        let method = Self.u16(header, 8)
        if method != entry.method { return "method \(method), the directory's \(entry.method)" }
        // With a data descriptor (flag bit 3) the header's CRC-32 and sizes are left zero.
        guard Self.u16(header, 6) & 8 == 0 else { return nil }
        let crc = Self.u32(header, 14)
        if crc != entry.crc {
            return String(format: "CRC-32 %08x, the directory's %08x", crc, entry.crc)
        }
        let compressed = Self.u32(header, 18)
        let size = Self.u32(header, 22)
        // 0xFFFFFFFF: the sizes are in the local zip64 field.
        if compressed != 0xFFFF_FFFF, Int64(compressed) != entry.compressedSize {
            return "\(compressed) stored bytes, the directory's \(entry.compressedSize)"
        }
        if size != 0xFFFF_FFFF, Int64(size) != entry.size { return "size \(size), the directory's \(entry.size)" }
        return nil
    }

    func corrupt(_ what: String, _ offset: Int64) -> BlobStreamError {
        BlobStreamError(.corrupt, "\(label): \(what) (at offset \(offset))")
    }

    static func u16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func u32(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(u16(b, i)) | UInt32(u16(b, i + 2)) << 16 }
    static func u64(_ b: [UInt8], _ i: Int) -> UInt64 { UInt64(u32(b, i)) | UInt64(u32(b, i + 4)) << 32 }

    /// An MS-DOS date and time (local time, 2-second steps), as seconds since 1970.
    static func dosTime(date: UInt16, time: UInt16) -> Int64 {
        var t = tm()
        t.tm_year = Int32(date >> 9) + 80
        t.tm_mon = Int32((date >> 5) & 0xF) - 1
        t.tm_mday = Int32(date & 0x1F)
        t.tm_hour = Int32(time >> 11)
        t.tm_min = Int32((time >> 5) & 0x3F)
        t.tm_sec = Int32(time & 0x1F) * 2
        t.tm_isdst = -1
        return Int64(mktime(&t))
    }

    /// Inflates a small raw deflate stream (a zip symbolic link's target); nil when damaged.
    static func rawInflate(_ input: [UInt8], size: Int) -> [UInt8]? {
        guard let decoder = try? RawDeflateDecoder(engine: .zlib, name: "a zip symbolic link") else { return nil }
        var output = [UInt8](repeating: 0, count: max(size, 1))
        let step = input.withUnsafeBytes { inBuffer in
            output.withUnsafeMutableBufferPointer {
                decoder.inflate(inBuffer, into: $0.baseAddress!, capacity: $0.count)
            }
        }
        guard step.ended, step.failure == nil else { return nil }
        return Array(output.prefix(step.produced))
    }
}

/// A zip's central directory as read: its bytes, where it starts, and how many entries its
/// end record counts.
struct ZipCentralDirectory {
    var bytes: [UInt8]
    var offset: Int64
    var count: Int64
}
