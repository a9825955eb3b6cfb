import BlobStream

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
/// "BSGZIDX" version(u8 = 1) flags(u8: 1 = identity present)
/// [identity: size (u64), mtime seconds (i64), mtime nanoseconds (u32), sample count S (u8), S × CRC-32 (u32)]
/// count N (u32, = the GZIDX count), N × chunk CRC-32 (u32)
/// CRC-32 of this record up to here (u32)
/// ```
extension GzipIndex {
    private static let gzidxMagic: [UInt8] = Array("GZIDX".utf8)
    private static let recordMagic: [UInt8] = Array("BSGZIDX".utf8)

    /// The index as bytes: GZIDX, then BlobStream's record.
    public func serialized() -> [UInt8] {
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
            out.u8(point.window == nil ? 0 : 1)
        }
        for point in points { if let window = point.window { out.bytes(window) } }
        guard hasChunkCRC32s || identity != nil else { return out.data }
        let recordStart = out.data.count
        out.bytes(Self.recordMagic)
        out.u8(1)
        out.u8(identity == nil ? 0 : 1)
        if let identity {
            out.u64(UInt64(identity.size))
            out.u64(UInt64(bitPattern: identity.modified.seconds))
            out.u32(UInt32(clamping: identity.modified.nanoseconds))
            out.u8(UInt8(clamping: identity.sampleCRC32s.count))
            for crc in identity.sampleCRC32s.prefix(255) { out.u32(crc) }
        }
        out.u32(UInt32(points.count))
        for point in points { out.u32(point.chunkCRC32 ?? 0) }
        out.u32(out.data[recordStart...].withUnsafeBytes { CRC32.update(0, $0) })
        return out.data
    }

    /// Reads an index from its bytes (GZIDX, with or without BlobStream's record).
    ///
    /// - Parameters:
    ///   - bytes: the index file's bytes.
    ///   - name: how errors name the bytes (the sidecar's path).
    /// - Throws: `.corrupt` naming `name` and what was wrong: truncation, wrong magic,
    ///   an unsupported version or window size, counts or offsets that cannot be right, a
    ///   record whose CRC-32 does not match. Never allocates more than the bytes given.
    public init(serialized bytes: [UInt8], name: String) throws(BlobStreamError) {
        var r = ByteReader(bytes: bytes, name: name)
        guard try r.bytes(5) == Self.gzidxMagic else { throw r.bad("not a GZIDX index (wrong magic)") }
        let version = try r.u8()
        guard version <= 1 else { throw r.bad("GZIDX version \(version) is not supported (1 is)") }
        guard try r.u8() == 0 else { throw r.bad("GZIDX reserved byte is not 0") }
        let compressedSize = try r.i64("compressed size")
        let uncompressedSize = try r.i64("uncompressed size")
        let spacing = Int(try r.u32())
        let windowSize = Int(try r.u32())
        let count = Int(try r.u32())
        guard count <= r.remaining / (version == 0 ? 17 : 18) else {
            throw r.bad("\(count) seek points cannot fit in the \(bytes.count) bytes of the file")
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
            guard windows <= r.remaining / windowSize else {
                throw r.bad("\(windows) windows of \(windowSize) bytes do not fit in the file (truncated?)")
            }
            for i in 0..<count where windowed[i] { points[i].window = try r.bytes(windowSize) }
        }
        var identity: FileIdentity?
        if r.remaining > 0 {
            let recordStart = r.position
            guard try r.bytes(Self.recordMagic.count) == Self.recordMagic else {
                throw r.bad("unknown bytes after the GZIDX data at byte \(recordStart)")
            }
            guard try r.u8() == 1 else { throw r.bad("BlobStream record version is not supported") }
            let flags = try r.u8()
            if flags & 1 != 0 {
                let size = try r.i64("identity size")
                let seconds = Int64(bitPattern: try r.u64())
                let nanoseconds = Int64(try r.u32())
                let samples = Int(try r.u8())
                var crcs: [UInt32] = []
                for _ in 0..<samples { crcs.append(try r.u32()) }
                identity = FileIdentity(
                    size: size, modified: .init(seconds: seconds, nanoseconds: nanoseconds), sampleCRC32s: crcs)
            }
            guard try r.u32() == UInt32(count) else { throw r.bad("the record's point count differs from GZIDX's") }
            var crcs: [UInt32] = []
            for _ in 0..<count { crcs.append(try r.u32()) }
            let computed = bytes[recordStart..<r.position].withUnsafeBytes { CRC32.update(0, $0) }
            guard try r.u32() == computed else { throw r.bad("BlobStream record fails its CRC-32 check") }
            guard r.remaining == 0 else { throw r.bad("unknown bytes after the BlobStream record") }
            for i in 0..<count { points[i].chunkCRC32 = crcs[i] }
        }
        self.init(
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
struct ByteReader {
    let bytes: [UInt8]
    let name: String
    private(set) var position = 0
    var remaining: Int { bytes.count - position }

    init(bytes: [UInt8], name: String) {
        self.bytes = bytes
        self.name = name
    }

    func bad(_ what: String) -> BlobStreamError {
        BlobStreamError(.corrupt, "\(name): corrupt gzip index: \(what)")
    }

    mutating func bytes(_ count: Int) throws(BlobStreamError) -> [UInt8] {
        guard count <= remaining else {
            throw bad("truncated at byte \(bytes.count) (\(count) more bytes expected at byte \(position))")
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
