import BlobStream
import BlobStreamCompression
import Foundation

// A zip's central directory (with zip64), read for an `ArchiveIndex`: each entry's name,
// sizes, CRC-32, method, attributes and time, and (from its local header) where its bytes
// start.

extension ArchiveOffsetReader {
    /// The members of a zip; nil when the bytes end with no zip end-of-central-directory
    /// record.
    func zipMembers() throws(BlobStreamError) -> [ArchiveIndex.Member]? {
        guard let directory = try zipCentralDirectory() else { return nil }
        var members: [ArchiveIndex.Member] = []
        var p = 0
        for _ in 0..<directory.count {
            guard p + 46 <= directory.bytes.count, Self.u32(directory.bytes, p) == 0x0201_4b50 else {
                throw corrupt("a central directory entry is damaged", directory.offset + Int64(p))
            }
            members.append(try zipMember(directory.bytes, &p, at: directory.offset))
        }
        return members
    }

    /// A zip's central directory: its bytes, where it starts, and how many entries the end
    /// record counts; nil when the bytes end with no end-of-central-directory record.
    func zipCentralDirectory() throws(BlobStreamError) -> (bytes: [UInt8], offset: Int64, count: Int64)? {
        let tailLength = Int(min(length, 22 + 65_535))
        guard tailLength >= 22 else { return nil }
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
        return (directory, directoryOffset, count)
    }

    /// The entry at `p` of the central directory (moves `p` past it).
    private func zipMember(_ d: [UInt8], _ p: inout Int, at base: Int64) throws(BlobStreamError) -> ArchiveIndex.Member
    {
        let entryOffset = base + Int64(p)
        let madeBy = Self.u16(d, p + 4)
        let flags = Self.u16(d, p + 8)
        let method = Self.u16(d, p + 10)
        let dosTime = Self.u16(d, p + 12)
        let dosDate = Self.u16(d, p + 14)
        let crc = Self.u32(d, p + 16)
        var compressed = Int64(Self.u32(d, p + 20))
        var size = Int64(Self.u32(d, p + 24))
        let nameLength = Int(Self.u16(d, p + 28))
        let extraLength = Int(Self.u16(d, p + 30))
        let commentLength = Int(Self.u16(d, p + 32))
        let external = Self.u32(d, p + 38)
        var local = Int64(Self.u32(d, p + 42))
        let end = p + 46 + nameLength + extraLength + commentLength
        guard end <= d.count else { throw corrupt("a central directory entry runs past its end", entryOffset) }
        let name = Array(d[(p + 46)..<(p + 46 + nameLength)])
        var mtime = Self.dosTime(date: dosDate, time: dosTime)
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
        p = end
        let fileType = madeBy >> 8 == 3 ? (external >> 16) & 0o170000 : 0
        let type: ArchiveEntry.EntryType
        switch fileType {
        case 0o040000: type = .directory
        case 0o120000: type = .symbolicLink
        case 0o100000: type = .file
        case 0: type = name.last == UInt8(ascii: "/") ? .directory : .file
        default: type = .unknown
        }
        let header = Array(try bytes(at: local, count: 30, what: "a local header"))
        guard Self.u32(header, 0) == 0x0403_4b50 else { throw corrupt("a local header is damaged", local) }
        let dataOffset = local + 30 + Int64(Self.u16(header, 26)) + Int64(Self.u16(header, 28))
        guard compressed >= 0, size >= 0, dataOffset + compressed <= length else {
            throw corrupt("an entry's bytes go past the archive's end", local)
        }
        var link: [UInt8] = []
        if type == .symbolicLink, flags & 1 == 0, compressed <= 4096 {
            let stored = Array(try bytes(at: dataOffset, count: Int(compressed), what: "a symbolic link's target"))
            link = method == 0 ? stored : (Self.rawInflate(stored, size: Int(min(size, 4096))) ?? [])
        }
        let hasData = type == .file
        return ArchiveIndex.Member(
            nameBytes: name, type: type, size: type == .file ? size : 0,
            mode: madeBy >> 8 == 3 ? (external >> 16) & 0o7777 : (type == .directory ? 0o755 : 0o644),
            modificationSeconds: mtime, modificationNanoseconds: 0, linkTargetBytes: link, headerOffset: local,
            dataOffset: dataOffset, crc32: hasData ? crc : nil, compressionMethod: method, compressedSize: compressed,
            isEncrypted: flags & 1 != 0)
    }

    func corrupt(_ what: String, _ offset: Int64) -> BlobStreamError {
        BlobStreamError(.corrupt, "archive '\(name)': \(what) (at offset \(offset))")
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
