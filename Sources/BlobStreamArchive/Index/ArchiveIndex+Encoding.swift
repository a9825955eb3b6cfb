import BlobStream
import BlobStreamCompression
import Foundation

// The index file: a compact versioned binary format of this library, little-endian.
//
//     magic "BLOBIDX\0" (8) | version u16 (2, or 3 for a remote object's index) | format u8
//       (1 tar, 2 zip, 3 tar.gz, 4 tar.xz, 5 tar.zst) | reserved u8 (0)
//     version 3 only: table length u64 (the bytes from the start to the end of the table's CRC-32)
//     identity: size i64 | mtime seconds i64 | mtime nanoseconds i32 | sample count S u32
//     version 3 only: ETag length u16 | the ETag's UTF-8 (a remote object's strong ETag)
//     member count u64
//     per member: type u8 | flags u8 (1 CRC, 2 encrypted, 4 zip fields, 8 seek point)
//       | mode u32 | mtime seconds i64 | mtime nanoseconds i32 | size i64
//       | header offset i64 | data offset i64 | CRC-32 u32 | method u16 | compressed size i64
//       | seek point i64 | name length u32 | name | link length u32 | link
//     the identity's samples: S × CRC-32 u32 (`BlobContentIdentity.sampleRanges(forSize:)`)
//     version 3 only: CRC-32 u32 of every byte before it (the table's: an index read by range
//       checks the member table without reading a tar.gz's gzip index, whose windows it
//       reads when a decode needs one; a wrong window fails that chunk's CRC-32)
//     format 3 (tar.gz) only: gzip index length u64 | the gzip index (`GzipIndex.serialized()`:
//       GZIDX, then its identity and chunk CRC-32s)
//     format 5 (tar.zst) only: frame count u64 | per frame, in file order from offset 0:
//       compressed size u64 | decompressed size u64 | flags u8 (1 checksum) | checksum u32
//     CRC-32 u32 of every byte before it
//
// A reader checks the trailing CRC-32 before believing anything (one reading by range, the
// table's), then every count and length against the bytes left, and every offset against
// the archive's size. Version 2 is written for an index of a file (no ETag), so that the
// builds before version 3 read it.

extension ArchiveIndex {
    static let magic: [UInt8] = Array("BLOBIDX\0".utf8)
    /// The version this library writes for an index of a file, and the oldest it reads.
    public static let formatVersion: UInt16 = 2
    /// The version written for an index of a remote object (its identity has an ETag): it
    /// also reads.
    public static let remoteFormatVersion: UInt16 = 3
    /// The longest ETag an index holds (S3's are 34–45 bytes with their quotes).
    static let maxEntityTagLength = 1024
    /// The most sampled CRC-32s an identity in an index file may hold.
    static let maximumSamples = 1024
    /// The fixed part of a member record (format 3 offsets are in the inflated tar).
    static let memberRecordSize = 1 + 1 + 4 + 8 + 4 + 8 + 8 + 8 + 4 + 2 + 8 + 8 + 4 + 4

    /// The index file's bytes (see `write(to:)`).
    public func encoded() -> Data {
        var out = [UInt8]()
        out.reserveCapacity(64 + members.count * (Self.memberRecordSize + 48))
        let entityTag = identity.entityTag.map { Array($0.utf8.prefix(Self.maxEntityTagLength)) }
        out += Self.magic
        put(&out, UInt64(entityTag == nil ? Self.formatVersion : Self.remoteFormatVersion), 2)
        out.append(format.rawValue)
        out.append(0)
        let tableLengthAt = out.count
        if entityTag != nil { put(&out, 0, 8) } // filled in below
        put(&out, UInt64(bitPattern: identity.size), 8)
        put(&out, UInt64(bitPattern: identity.modified.seconds), 8)
        put(&out, UInt64(UInt32(truncatingIfNeeded: identity.modified.nanoseconds)), 4)
        let samples = identity.sampleCRC32s.prefix(Self.maximumSamples)
        put(&out, UInt64(samples.count), 4)
        if let entityTag {
            put(&out, UInt64(entityTag.count), 2)
            out += entityTag
        }
        put(&out, UInt64(members.count), 8)
        for m in members {
            out.append(Self.typeCode(m.type))
            var flags: UInt8 = 0
            if m.crc32 != nil { flags |= 1 }
            if m.isEncrypted { flags |= 2 }
            if m.compressionMethod != nil || m.compressedSize != nil { flags |= 4 }
            if m.seekPoint != nil { flags |= 8 }
            out.append(flags)
            put(&out, UInt64(m.mode), 4)
            put(&out, UInt64(bitPattern: m.modificationSeconds), 8)
            put(&out, UInt64(UInt32(bitPattern: m.modificationNanoseconds)), 4)
            put(&out, UInt64(bitPattern: m.size), 8)
            put(&out, UInt64(bitPattern: m.headerOffset), 8)
            put(&out, UInt64(bitPattern: m.dataOffset), 8)
            put(&out, UInt64(m.crc32 ?? 0), 4)
            put(&out, UInt64(m.compressionMethod ?? 0), 2)
            put(&out, UInt64(bitPattern: m.compressedSize ?? 0), 8)
            put(&out, UInt64(bitPattern: m.seekPoint ?? -1), 8)
            put(&out, UInt64(m.nameBytes.count), 4)
            out += m.nameBytes
            put(&out, UInt64(m.linkTargetBytes.count), 4)
            out += m.linkTargetBytes
        }
        for crc in samples { put(&out, UInt64(crc), 4) }
        if entityTag != nil {
            var length: [UInt8] = []
            put(&length, UInt64(out.count + 4), 8)
            out.replaceSubrange(tableLengthAt..<(tableLengthAt + 8), with: length)
            let tableCRC = out.withUnsafeBytes { ZlibCRC32.update(0, $0) }
            put(&out, UInt64(tableCRC), 4)
        }
        if format == .tarGzip {
            let gzip = gzipIndex?.serialized() ?? []
            put(&out, UInt64(gzip.count), 8)
            out += gzip
        }
        if format == .tarZstd {
            put(&out, UInt64(zstdFrames?.frames.count ?? 0), 8)
            zstdFrames?.appendRecords(to: &out)
        }
        let crc = out.withUnsafeBytes { ZlibCRC32.update(0, $0) }
        put(&out, UInt64(crc), 4)
        return Data(out)
    }

    /// Decodes an index file's bytes; `name` names the file in errors.
    ///
    /// - Throws: `BlobStreamError` `.corrupt` (truncated, altered, not an index: the message
    ///   says what and where), `.unsupported` (another version).
    public init(decoding data: Data, name: String) throws {
        var bytes = [UInt8](data)
        try self.init(decodingBytes: &bytes, name: name)
    }

    /// Decodes an index file's bytes, emptying `bytes` (a tar.gz's are released before its
    /// gzip index is decoded, so that the two are not held at once).
    init(decodingBytes bytes: inout [UInt8], name: String) throws {
        var reader = ArchiveIndexMemoryBytes(bytes: bytes)
        bytes = []
        try self.init(decoding: &reader, name: name)
    }

    /// Decodes the index file `file` (open for reading) without holding it: its CRC-32 is
    /// checked through a small buffer, the members are read through it, and a tar.gz's gzip
    /// index leaves its windows in the file (each read when a decode needs it).
    init(decodingFile file: ArchiveIndexFileBytes, name: String) throws {
        var reader = file
        try self.init(decoding: &reader, name: name)
    }

    /// Decodes the index `reader` reads (from memory, a file or a source).
    init<Reader: ArchiveIndexBytes>(decodingReader reader: inout Reader, name: String) throws {
        try self.init(decoding: &reader, name: name)
    }

    private init<Reader: ArchiveIndexBytes>(decoding reader: inout Reader, name: String) throws {
        func bad(_ what: String) -> BlobStreamError {
            BlobStreamError(.corrupt, "archive index '\(name)' is damaged: \(what)")
        }
        let length = reader.length
        guard length >= 8 + 4 + 24 + 8 + 4 else {
            throw bad("it is \(length) bytes long, shorter than any index")
        }
        guard try reader.bytes(8) == Self.magic else { throw bad("it is not an archive index (no BLOBIDX header)") }
        let version = UInt16(try reader.take(2))
        guard version == Self.formatVersion || version == Self.remoteFormatVersion else {
            throw BlobStreamError(
                .unsupported,
                "archive index '\(name)' is version \(version); this library reads versions \(Self.formatVersion) and \(Self.remoteFormatVersion)"
            )
        }
        guard let format = Format(rawValue: UInt8(try reader.take(1))) else { throw bad("unknown archive format") }
        _ = try reader.take(1)
        var tableLength: Int?
        if version == Self.remoteFormatVersion {
            let claimed = try reader.take(8)
            guard claimed >= 8 + 4 + 8 + 24 + 2 + 8 + 4, claimed <= UInt64(length - 4) else {
                throw bad("its member table claims \(claimed) bytes of its \(length)")
            }
            tableLength = Int(claimed)
        }
        let (stored, computed) = try reader.storedAndComputedCRC32(tableLength: tableLength)
        guard stored == computed else { throw bad("its checksum does not match (truncated or altered)") }
        let size = Int64(bitPattern: try reader.take(8))
        let modified = BlobContentIdentity.Timestamp(
            seconds: Int64(bitPattern: try reader.take(8)), nanoseconds: Int64(UInt32(try reader.take(4))))
        let sampleCount = Int(try reader.take(4))
        guard sampleCount <= Self.maximumSamples else {
            throw bad("its identity claims \(sampleCount) samples (at most \(Self.maximumSamples))")
        }
        var identity = BlobContentIdentity(size: size, modified: modified, sampleCRC32s: [])
        if tableLength != nil {
            let tagLength = Int(try reader.take(2))
            guard tagLength > 0, tagLength <= Self.maxEntityTagLength, tagLength <= length - reader.position,
                let tag = String(validating: try reader.bytes(tagLength), as: UTF8.self)
            else { throw bad("its ETag is not UTF-8 of 1 to \(Self.maxEntityTagLength) bytes") }
            identity.entityTag = tag
        }
        let end = tableLength.map { $0 - 4 } ?? length - 4
        let count = try reader.take(8)
        guard identity.size >= 0, count <= UInt64((end - reader.position) / Self.memberRecordSize) else {
            throw bad("it claims \(count) members, more than its \(length) bytes can hold")
        }
        var members: [Member] = []
        members.reserveCapacity(Int(count))
        for k in 0..<Int(count) {
            guard end - reader.position >= Self.memberRecordSize else { throw bad("member \(k) is cut short") }
            let typeCode = UInt8(try reader.take(1))
            guard let type = Self.type(typeCode) else { throw bad("member \(k) has an unknown type \(typeCode)") }
            let flags = UInt8(try reader.take(1))
            let mode = UInt32(try reader.take(4))
            let seconds = Int64(bitPattern: try reader.take(8))
            let nanos = Int32(bitPattern: UInt32(try reader.take(4)))
            let size = Int64(bitPattern: try reader.take(8))
            let header = Int64(bitPattern: try reader.take(8))
            let dataOffset = Int64(bitPattern: try reader.take(8))
            let crc = UInt32(try reader.take(4))
            let method = UInt16(try reader.take(2))
            let compressed = Int64(bitPattern: try reader.take(8))
            let seek = Int64(bitPattern: try reader.take(8))
            let nameLength = Int(try reader.take(4))
            guard nameLength <= end - reader.position - 4 else { throw bad("member \(k)'s name runs past the end") }
            let nameBytes = try reader.bytes(nameLength)
            let linkLength = Int(try reader.take(4))
            guard linkLength <= end - reader.position else { throw bad("member \(k)'s link runs past the end") }
            let link = try reader.bytes(linkLength)
            let storedSize = flags & 4 != 0 ? compressed : size
            // A tar.gz's offsets are in the inflated bytes: checked against the gzip index below.
            let bound = [.tarGzip, .tarXz, .tarZstd].contains(format) ? Int64.max : identity.size
            guard size >= 0, storedSize >= 0, header >= 0, dataOffset >= header, dataOffset <= bound,
                storedSize <= bound - dataOffset
            else {
                throw bad("member \(k) lies outside the \(identity.size)-byte archive")
            }
            members.append(
                Member(
                    nameBytes: nameBytes, type: type, size: size, mode: mode, modificationSeconds: seconds,
                    modificationNanoseconds: nanos, linkTargetBytes: link, headerOffset: header,
                    dataOffset: dataOffset, crc32: flags & 1 != 0 ? crc : nil,
                    compressionMethod: flags & 4 != 0 ? method : nil, compressedSize: flags & 4 != 0 ? compressed : nil,
                    isEncrypted: flags & 2 != 0, seekPoint: flags & 8 != 0 ? seek : nil))
        }
        guard end - reader.position >= 4 * sampleCount else { throw bad("the identity's samples are cut short") }
        for _ in 0..<sampleCount { identity.sampleCRC32s.append(UInt32(try reader.take(4))) }
        var fileEnd = end
        if tableLength != nil {
            guard reader.position == end else { throw bad("\(end - reader.position) bytes follow the last member") }
            _ = try reader.take(4) // the table's CRC-32, checked above
            fileEnd = length - 4
        }
        var gzipIndex: GzipIndex?
        if format == .tarGzip {
            guard fileEnd - reader.position >= 8 else { throw bad("the gzip index is missing") }
            let gzipLength = try reader.take(8)
            guard gzipLength <= UInt64(fileEnd - reader.position) else { throw bad("the gzip index runs past the end") }
            let gzip = try reader.gzipIndex(length: Int(gzipLength), name: "the gzip index in '\(name)'")
            guard gzip.hasChunkCRC32s, gzip.compressedSize == identity.size else {
                throw bad("its gzip index lacks chunk CRC-32s or is for another size")
            }
            for (k, m) in members.enumerated() {
                guard m.dataOffset + m.size <= gzip.uncompressedSize,
                    let point = m.seekPoint, point >= 0, point < gzip.points.count,
                    gzip.points[Int(point)].uncompressedOffset <= m.dataOffset
                else { throw bad("member \(k) lies outside the \(gzip.uncompressedSize) inflated bytes") }
            }
            gzipIndex = gzip
        }
        var zstdFrames: ZstdSeekTable?
        if format == .tarZstd {
            zstdFrames = try Self.decodeZstdFrames(&reader, end: fileEnd, archiveSize: identity.size, bad: bad)
            let length = zstdFrames?.decompressedLength ?? 0
            for (k, m) in members.enumerated() where m.dataOffset + m.size > length {
                throw bad("member \(k) lies outside the \(length) decompressed bytes its zstd frames hold")
            }
        }
        guard reader.position == fileEnd else { throw bad("\(fileEnd - reader.position) bytes follow the last member") }
        self.init(
            format: format, identity: identity, members: members, gzipIndex: gzipIndex, zstdFrames: zstdFrames)
    }

    /// A tar.zst's frame records: each frame starts where the one before it ends, and they
    /// end inside the archive.
    private static func decodeZstdFrames<Reader: ArchiveIndexBytes>(
        _ reader: inout Reader, end: Int, archiveSize: Int64, bad: (String) -> BlobStreamError
    ) throws -> ZstdSeekTable {
        guard end - reader.position >= 8 else { throw bad("the zstd frame table is missing") }
        let count = try reader.take(8)
        guard count > 0, count <= UInt64((end - reader.position) / ZstdSeekTable.recordSize) else {
            throw bad("it claims \(count) zstd frames, not 1 to what its bytes can hold")
        }
        return try ZstdSeekTable(
            records: Int(count), fileSize: archiveSize, take: { (n: Int) throws(any Error) in try reader.take(n) },
            bad: { (what: String) -> any Error in bad(what) })
    }

    private func put(_ out: inout [UInt8], _ value: UInt64, _ count: Int) {
        for i in 0..<count { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }

    static func typeCode(_ type: ArchiveEntry.EntryType) -> UInt8 {
        switch type {
        case .file: 1
        case .directory: 2
        case .symbolicLink: 3
        case .hardLink: 4
        case .characterDevice: 5
        case .blockDevice: 6
        case .fifo: 7
        case .socket: 8
        case .unknown: 9
        }
    }

    static func type(_ code: UInt8) -> ArchiveEntry.EntryType? {
        let all: [ArchiveEntry.EntryType] = [
            .file, .directory, .symbolicLink, .hardLink, .characterDevice, .blockDevice, .fifo, .socket, .unknown,
        ]
        return (1...9).contains(code) ? all[Int(code) - 1] : nil
    }
}
