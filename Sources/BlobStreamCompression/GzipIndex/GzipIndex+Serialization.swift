import BlobStream
import BlobStreamSystem

/// The on-disk form: indexed_gzip's GZIDX (all integers little-endian)
///
/// ```
/// "GZIDX" version(u8 = 1) reserved(u8 = 0)
/// compressed size (u64), uncompressed size (u64), spacing (u32), window size W (u32), count N (u32)
/// N × { compressed offset (u64), uncompressed offset (u64), bits (u8), has window (u8) }
/// W bytes for each point that has a window, in order
/// ```
///
/// followed by BlobStream's record (absent in a foreign file):
///
/// ```
/// "BSGZIDX" version(u8 = 1, or 2 with flag 2) flags(u8: 1 = identity present, 2 = the identity has an ETag)
/// [identity: size (u64), mtime seconds (i64), mtime nanoseconds (u32), sample count S (u8), S × CRC-32 (u32)
///  [version 2: ETag length L (u16), L bytes of UTF-8: a remote object's strong ETag]]
/// count N (u32, = the GZIDX count), N × chunk CRC-32 (u32)
/// CRC-32 of this record up to here (u32)
/// ```
extension GzipIndex {
    private static let gzidxMagic: [UInt8] = Array("GZIDX".utf8)
    private static let recordMagic: [UInt8] = Array("BSGZIDX".utf8)
    /// The longest ETag a record holds (S3's are 34–45 bytes with their quotes).
    static let maxEntityTagLength = 1024

    /// The index as bytes: GZIDX, then BlobStream's record.
    ///
    /// The windows of an index read from a file are read from it; one that can no longer be
    /// read there (the file was cut after loading) is written as zeros, which the chunk
    /// CRC-32s then refuse. `write(toPath:)` throws instead.
    public func serialized() -> [UInt8] {
        serialize { point throws(Never) in
            (try? point.loadWindow()) ?? (point.hasWindow ? [UInt8](repeating: 0, count: Self.windowSize) : nil)
        }
    }

    /// The index as bytes, failing when a window left in the index file cannot be read
    /// (what `write(toPath:)` writes).
    public func serializedLoadingWindows() throws(BlobStreamError) -> [UInt8] {
        try serialize { point throws(BlobStreamError) in try point.loadWindow() }
    }

    private func serialize<E: Error>(window: (SeekPoint) throws(E) -> [UInt8]?) throws(E) -> [UInt8] {
        var out = ByteWriter()
        out.bytes(Self.gzidxMagic)
        out.u8(1)
        out.u8(0)
        out.u64(UInt64(compressedSize))
        out.u64(UInt64(uncompressedSize))
        out.u32(UInt32(clamping: spacing))
        out.u32(UInt32(Self.windowSize))
        out.u32(UInt32(points.count))
        for point in points {
            out.u64(UInt64(point.compressedOffset))
            out.u64(UInt64(point.uncompressedOffset))
            out.u8(UInt8(point.bitOffset))
            out.u8(point.hasWindow ? 1 : 0)
        }
        for point in points where point.hasWindow { if let bytes = try window(point) { out.bytes(bytes) } }
        guard hasChunkCRC32s || identity != nil else { return out.data }
        let recordStart = out.data.count
        // Version 1 unless the identity has an ETag: an index of a file stays readable by
        // the builds before version 2.
        let entityTag = identity?.entityTag.map { Array($0.utf8.prefix(Self.maxEntityTagLength)) }
        out.bytes(Self.recordMagic)
        out.u8(entityTag == nil ? 1 : 2)
        out.u8(identity == nil ? 0 : entityTag == nil ? 1 : 3)
        if let identity {
            out.u64(UInt64(identity.size))
            out.u64(UInt64(bitPattern: identity.modified.seconds))
            out.u32(UInt32(clamping: identity.modified.nanoseconds))
            out.u8(UInt8(clamping: identity.sampleCRC32s.count))
            for crc in identity.sampleCRC32s.prefix(255) { out.u32(crc) }
            if let entityTag {
                out.u8(UInt8(entityTag.count & 0xFF))
                out.u8(UInt8(entityTag.count >> 8))
                out.bytes(entityTag)
            }
        }
        out.u32(UInt32(points.count))
        for point in points { out.u32(point.chunkCRC32 ?? 0) }
        out.u32(out.data[recordStart...].withUnsafeBytes { ZlibCRC32.update(0, $0) })
        return out.data
    }

    /// Reads an index from its bytes (GZIDX, with or without BlobStream's record; a seal at
    /// their end, `IndexSeal`, is set aside unchecked).
    ///
    /// - Parameters:
    ///   - bytes: the index file's bytes.
    ///   - name: how errors name the bytes (the sidecar's path).
    /// - Throws: `.corrupt` naming `name` and what was wrong: truncation, wrong magic,
    ///   an unsupported version or window size, counts or offsets that cannot be right, a
    ///   record whose CRC-32 does not match. Never allocates more than the bytes given.
    public init(serialized bytes: [UInt8], name: String) throws(BlobStreamError) {
        var r = ByteReader(bytes: IndexSeal.withoutSeal(bytes), name: name)
        self = try Self.parse(&r, windows: .inline)
    }

    /// Reads an index that is `length` bytes at `offset` of an open file (a GZIDX embedded
    /// in a bigger file, such as an archive's member index), leaving its windows in the file:
    /// the point table and the record are read now, each window when a decode needs it (see
    /// `SeekPoint.loadWindow()`).
    ///
    /// - Parameters:
    ///   - descriptor: an open file; it is duplicated (the caller keeps and closes its own).
    ///   - offset: where the GZIDX data starts in the file.
    ///   - length: its length, to the end of BlobStream's record.
    ///   - name: how errors name the index.
    /// - Throws: the errors of `init(serialized:name:)`, with byte positions counted from
    ///   `offset`; `.ioFailed` when the file cannot be read.
    public init(readingFileDescriptor descriptor: Int32, offset: Int64, length: Int64, name: String)
        throws(BlobStreamError)
    {
        let file = try PositionalFile(duplicating: descriptor, label: name)
        self = try Self.read(from: file, offset: offset, length: length)
    }

    /// The fixed part of a GZIDX header: magic, version, reserved, sizes, spacing, window size, count.
    private static let headerSize = 5 + 1 + 1 + 8 + 8 + 4 + 4 + 4

    /// Reads the index in `file` at `offset`: header, point table and record, the windows left there.
    package static func read(from file: any IndexByteStore, offset: Int64, length: Int64) throws(BlobStreamError)
        -> GzipIndex
    {
        let head = try file.bytes(count: Int(min(Int64(headerSize), length)), at: offset, what: "gzip index")
        guard head.count == headerSize, head.starts(with: gzidxMagic) else {
            var r = ByteReader(bytes: head, name: file.label) // the parser says what is wrong
            return try parse(&r, windows: .inline)
        }
        let little = { (at: Int, count: Int) in (0..<count).reduce(0) { $0 | Int(head[at + $1]) << (8 * $1) } }
        let version = Int(head[5])
        let entrySize = version == 0 ? 17 : 18
        let windowSize = little(27, 4)
        let count = little(31, 4)
        let tableLength = Int(min(Int64(count) * Int64(entrySize), length - Int64(headerSize)))
        let table = try file.bytes(count: tableLength, at: offset + Int64(headerSize), what: "gzip index")
        let windowed =
            version == 0
            ? max(0, min(count, tableLength / entrySize) - 1)
            : stride(from: entrySize - 1, to: tableLength, by: entrySize).filter { table[$0] != 0 }.count
        let windowsStart = Int64(headerSize + tableLength)
        let windowsLength = Int64(windowed) * Int64(windowSize)
        guard windowSize == Self.windowSize || windowed == 0, windowsStart + windowsLength <= length else {
            // Windows of another size, or more than the file holds: the parser says so.
            var r = ByteReader(bytes: head + table, name: file.label)
            r.setFileLength(Int(length))
            return try parse(&r, windows: .inline)
        }
        // The record after the windows, at most as long as a record can be (one byte more
        // shows that something follows it).
        let recordLimit = recordMagic.count + 2 + 8 + 8 + 4 + 1 + 255 * 4 + 2 + maxEntityTagLength + 4 + count * 4 + 4
        let tailLength = Int(min(length - windowsStart - windowsLength, Int64(recordLimit + 1)))
        let tail = try file.bytes(count: tailLength, at: offset + windowsStart + windowsLength, what: "gzip index")
        var r = ByteReader(bytes: head + table + tail, name: file.label)
        r.skip(at: Int(windowsStart), length: Int(windowsLength), fileLength: Int(length))
        return try parse(&r, windows: .file(file, start: offset + windowsStart))
    }

    /// Where the parser finds the windows.
    private enum WindowSource {
        /// In the bytes, after the point table.
        case inline
        /// In the file, from `start` on (the reader's bytes skip them).
        case file(any IndexByteStore, start: Int64)
    }

    private static func parse(_ r: inout ByteReader, windows source: WindowSource) throws(BlobStreamError)
        -> GzipIndex
    {
        guard try r.bytes(5) == Self.gzidxMagic else { throw r.bad("not a GZIDX index (wrong magic)") }
        let version = try r.u8()
        guard version <= 1 else { throw r.bad("GZIDX version \(version) is not supported (1 is)") }
        guard try r.u8() == 0 else { throw r.bad("GZIDX reserved byte is not 0") }
        let compressedSize = try r.i64("compressed size")
        let uncompressedSize = try r.i64("uncompressed size")
        let spacing = Int(try r.u32())
        let windowSize = Int(try r.u32())
        let count = Int(try r.u32())
        guard count <= r.fileRemaining / (version == 0 ? 17 : 18) else {
            throw r.bad("\(count) seek points cannot fit in the \(r.fileLength) bytes of the file")
        }
        var points: [SeekPoint] = []
        points.reserveCapacity(count)
        var windowed: [Bool] = []
        for i in 0..<count {
            let compressed = try r.i64("compressed offset of point \(i)")
            let uncompressed = try r.i64("uncompressed offset of point \(i)")
            let bits = Int(try r.u8())
            let hasWindow = try version == 0 ? i > 0 : r.u8() != 0
            guard bits <= 7, compressed <= compressedSize, uncompressed <= uncompressedSize,
                bits == 0 || compressed > 0
            else { throw r.bad("seek point \(i) is out of range") }
            if let last = points.last,
                compressed < last.compressedOffset || uncompressed < last.uncompressedOffset
            {
                throw r.bad("seek point \(i) comes before seek point \(i - 1)")
            }
            points.append(
                SeekPoint(
                    uncompressedOffset: uncompressed, compressedOffset: compressed, bitOffset: bits, window: nil,
                    chunkCRC32: nil))
            windowed.append(hasWindow)
        }
        let windows = windowed.filter { $0 }.count
        if windows > 0 {
            guard windowSize == Self.windowSize else {
                throw r.bad("window size \(windowSize) is not supported (\(Self.windowSize) is)")
            }
            guard windows <= r.fileRemaining / windowSize else {
                throw r.bad("\(windows) windows of \(windowSize) bytes do not fit in the file (truncated?)")
            }
            switch source {
            case .inline:
                for i in 0..<count where windowed[i] { points[i].window = try r.bytes(windowSize) }
            case .file(let file, let start):
                var k: Int64 = 0
                for i in 0..<count where windowed[i] {
                    points[i].windowStorage = .stored(file, offset: start + k * Int64(windowSize))
                    k += 1
                }
                r.passSkipped()
            }
        }
        var identity: BlobContentIdentity?
        if r.remaining > 0 {
            let recordStart = r.position
            guard try r.bytes(Self.recordMagic.count) == Self.recordMagic else {
                throw r.bad("unknown bytes after the GZIDX data at byte \(r.filePosition(recordStart))")
            }
            let recordVersion = try r.u8()
            guard recordVersion == 1 || recordVersion == 2 else {
                throw r.bad("BlobStream record version \(recordVersion) is not supported (1 and 2 are)")
            }
            let flags = try r.u8()
            guard flags & 2 == 0 || (recordVersion == 2 && flags & 1 != 0) else {
                throw r.bad("BlobStream record flags \(flags) do not fit its version \(recordVersion)")
            }
            if flags & 1 != 0 {
                let size = try r.i64("identity size")
                let seconds = Int64(bitPattern: try r.u64())
                let nanoseconds = Int64(try r.u32())
                let samples = Int(try r.u8())
                var crcs: [UInt32] = []
                for _ in 0..<samples { crcs.append(try r.u32()) }
                var entityTag: String?
                if flags & 2 != 0 {
                    let length = Int(try r.u8()) | Int(try r.u8()) << 8
                    guard length <= Self.maxEntityTagLength,
                        let tag = String(validating: try r.bytes(length), as: UTF8.self)
                    else { throw r.bad("the record's ETag is not UTF-8 of at most \(Self.maxEntityTagLength) bytes") }
                    entityTag = tag
                }
                identity = BlobContentIdentity(
                    size: size, modified: .init(seconds: seconds, nanoseconds: nanoseconds), sampleCRC32s: crcs,
                    entityTag: entityTag)
            }
            guard try r.u32() == UInt32(count) else { throw r.bad("the record's point count differs from GZIDX's") }
            var crcs: [UInt32] = []
            for _ in 0..<count { crcs.append(try r.u32()) }
            let computed = r.crc32(from: recordStart)
            guard try r.u32() == computed else { throw r.bad("BlobStream record fails its CRC-32 check") }
            guard r.remaining == 0 else { throw r.bad("unknown bytes after the BlobStream record") }
            for i in 0..<count { points[i].chunkCRC32 = crcs[i] }
        }
        return GzipIndex(
            spacing: spacing, compressedSize: compressedSize, uncompressedSize: uncompressedSize, points: points,
            identity: identity)
    }
}

/// Appends little-endian integers.
struct ByteWriter {
    var data: [UInt8] = []
    mutating func bytes(_ b: [UInt8]) { data += b }
    mutating func u8(_ v: UInt8) { data.append(v) }
    mutating func u32(_ v: UInt32) { for i in 0..<4 { data.append(UInt8(truncatingIfNeeded: v >> (8 * i))) } }
    mutating func u64(_ v: UInt64) { for i in 0..<8 { data.append(UInt8(truncatingIfNeeded: v >> (8 * i))) } }
}

/// Reads little-endian integers, failing with `.corrupt` at the end of the bytes.
///
/// For an index read from a file, the bytes may leave out the windows (`skip`): positions
/// in messages stay positions in the file, and the sizes checked against are the file's.
struct ByteReader {
    let bytes: [UInt8]
    let name: String
    private(set) var position = 0
    /// Where in `bytes` the left-out windows were, and how long they are.
    private var skippedAt = Int.max
    private var skippedLength = 0
    private var skippedPassed = false
    /// The whole file's length (`bytes.count` when nothing is left out).
    private(set) var fileLength: Int
    var remaining: Int { bytes.count - position }
    /// The bytes left in the file from here, the left-out windows included.
    var fileRemaining: Int { fileLength - filePosition(position) }

    init(bytes: [UInt8], name: String) {
        self.bytes = bytes
        self.name = name
        self.fileLength = bytes.count
    }

    /// The windows, `length` bytes of the file, are left out at `at` in `bytes`.
    mutating func skip(at: Int, length: Int, fileLength: Int) {
        skippedAt = at
        skippedLength = length
        self.fileLength = fileLength
    }

    /// `bytes` is the file's start only: the file is `length` bytes long.
    mutating func setFileLength(_ length: Int) { fileLength = length }

    /// Moves past the left-out windows (the reader is at their place).
    mutating func passSkipped() { skippedPassed = true }

    /// A position in `bytes` as a position in the file.
    func filePosition(_ p: Int) -> Int { p >= skippedAt && skippedPassed ? p + skippedLength : p }

    /// The CRC-32 of the bytes from `start` to here.
    func crc32(from start: Int) -> UInt32 { bytes[start..<position].withUnsafeBytes { ZlibCRC32.update(0, $0) } }

    func bad(_ what: String) -> BlobStreamError {
        BlobStreamError(.corrupt, "\(name): corrupt gzip index: \(what)")
    }

    mutating func bytes(_ count: Int) throws(BlobStreamError) -> [UInt8] {
        guard count <= remaining else {
            throw bad(
                "truncated at byte \(fileLength) (\(count) more bytes expected at byte \(filePosition(position)))")
        }
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    mutating func u8() throws(BlobStreamError) -> UInt8 { try bytes(1)[0] }
    mutating func u32() throws(BlobStreamError) -> UInt32 {
        try bytes(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }
    mutating func u64() throws(BlobStreamError) -> UInt64 {
        try bytes(8).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }
    mutating func i64(_ what: String) throws(BlobStreamError) -> Int64 {
        let v = try u64()
        guard v <= UInt64(Int64.max) else { throw bad("\(what) \(v) is out of range") }
        return Int64(v)
    }
}

extension GzipIndex {
    /// Reads the index that `source` holds — an index object on a store (`KEY.gzidx`), a web
    /// server's file — by range, never whole: the header and point table now (one request
    /// for up to about 3,600 points), BlobStream's record after the windows, and each window
    /// when a decode needs it (see `SeekPoint.loadWindow()`).
    ///
    /// ```swift
    /// let object = try registry.makeSource(url: "s3://photos/big.bin.gz.gzidx") as! any BlobRangeReading
    /// object.open()
    /// let index = try GzipIndex(readingFrom: object, name: "s3://photos/big.bin.gz.gzidx")
    /// ```
    ///
    /// - Parameters:
    ///   - source: the index's bytes, open, its length known; the index takes it over (its
    ///     windows are read from it) and closes it when the last copy of the index is released.
    ///   - name: how errors name the index.
    /// - Throws: the errors of `init(serialized:name:)`; the source's error, naming `name`
    ///   and the offset; `.unsupported` when the source's length is unknown.
    public init(readingFrom source: any BlobRangeReading, name: String) throws(BlobStreamError) {
        if source.length == nil { _ = try source.contentIdentity() } // waits for the first answer
        guard let length = source.length else {
            throw BlobStreamError(.unsupported, "\(name): the index's length is unknown, so it cannot be read by range")
        }
        let store = SourceIndexBytes(source, label: name)
        self = try Self.read(from: store, offset: 0, length: IndexSeal.unsealedLength(of: store, length: length))
    }
}
