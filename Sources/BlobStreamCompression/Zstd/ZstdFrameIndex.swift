import BlobStream
import BlobStreamChecksums
import BlobStreamSystem
import Foundation

/// The frames of a .zst file in many frames with no seek table (`pzstd`'s, `zstd -B`-style
/// pieces concatenated, a seekable file whose table was cut off), as one decoding pass found
/// them: each frame's place, sizes and content checksum. With it a `ZstdDataSource` enters
/// the file at the frame that holds an offset, as it does a seekable file through its own
/// table, and decodes long reads in parallel when the frames are regular.
///
/// ```swift
/// let index = try ZstdFrameIndex.build(fileAtPath: "/data/events.jsonl.zst")
/// try index.write(toPath: ZstdFrameIndex.sidecar(of: "/data/events.jsonl.zst"))   // events.jsonl.zst.zstidx
/// // later, in any process: found beside the file when it matches
/// ```
///
/// ## What protects a read through it
/// - The index records the file it was made from (`identity`: its size, modification time
///   and sampled CRC-32s; an object's size and strong ETag). One that does not match is
///   never used: named, it is refused with `.changed`; found beside the file, it is ignored.
/// - Every frame entered through it is checked as it is decoded: a zstd frame starts where
///   the index says (its header's content size, when it has one, is the recorded size), it
///   ends after exactly the recorded compressed and decompressed sizes, and carries the
///   recorded checksum; a mismatch is `.corrupt`, naming the index. The index file itself is
///   checked whole (a CRC-32) before anything in it is believed.
/// - The frames' places in the file follow from their compressed sizes (each starts where
///   the one before it ends), so a changed size moves every later frame off its header. Their
///   decompressed offsets follow from the decompressed sizes before them, which cannot be
///   checked without decoding those frames: so each frame's record also keeps a placed
///   checksum, the XXH64 of its bytes seeded with its decompressed offset
///   (`ZstdSeekTable.Frame.placedChecksum`). A frame entered at another offset than the one
///   it was decoded at when the index was made (an earlier frame's size changed, frames
///   swapped) fails that check at its end: the bytes handed out before it are followed by an
///   error naming the index, never by a clean end. (An index rewritten whole by someone who
///   decoded the file, every placed checksum made again for the offsets of the lie, is not
///   caught: as with any index, trust the folder it is in.)
/// - A file of one frame gets no index (`build` refuses it): it cannot be entered midway.
///
/// ## The file
/// `FILE.zst.zstidx` beside the file (`sidecar(of:)`), little-endian:
///
///     magic "BLOBZIDX" (8) | version u16 (1) | reserved u16 (0)
///     identity: size i64 | mtime seconds i64 | mtime nanoseconds u32 | sample count S u32
///       | ETag length u16 | the ETag's UTF-8 (an object's; 0 for a file)
///     frame count u64 | per frame, in file order from offset 0: compressed size u64
///       | decompressed size u64 | flags u8 (1 checksum) | checksum u32
///     per frame, in the same order: flags u8 (1 placed checksum) | placed checksum u32
///     S × sampled CRC-32 u32
///     CRC-32 u32 of every byte before it
public struct ZstdFrameIndex: Sendable, Equatable {
    /// The file's frames (skippable ones as frames of 0 bytes; a trailing seek table left out).
    public var frames: ZstdSeekTable
    /// What the index was made from.
    public var identity: BlobContentIdentity
    /// Where it was read from (its path or URL), for errors; nil for one made in memory. Not
    /// compared by `==`.
    public var name: String?

    static let magic: [UInt8] = Array("BLOBZIDX".utf8)
    /// The version this library writes and reads: 2, with each frame's placed checksum
    /// (version 1 had none, and is refused: build the index again).
    public static let formatVersion: UInt16 = 2
    /// The size of a frame's placed checksum record: flags u8 | checksum u32.
    static let placedRecordSize = 5

    /// Whether both describe the same frames of the same file (`name` aside).
    public static func == (lhs: ZstdFrameIndex, rhs: ZstdFrameIndex) -> Bool {
        lhs.frames == rhs.frames && lhs.identity == rhs.identity
    }

    /// How errors name it: "the zstd frame index 'PATH'".
    package var tableName: String { name.map { "the zstd frame index '\($0)'" } ?? "the zstd frame index" }
    static let maximumSamples = 1024
    static let maximumEntityTagLength = 1024

    /// Makes one.
    public init(frames: ZstdSeekTable, identity: BlobContentIdentity) {
        self.frames = frames
        self.identity = identity
    }

    /// Indexes the .zst file at `path` in one decoding pass (every frame's checksum checked).
    ///
    /// - Throws: `BlobStreamError` naming the file: `.unsupported` for a file of one frame
    ///   (it cannot be entered midway) or a window over `windowLog`; `.corrupt`,
    ///   `.truncated` for a damaged or cut file; `.changed` when it changed during the pass.
    public static func build(fileAtPath path: String, windowLog: Int = ZstdWindow.defaultLog) throws(BlobStreamError)
        -> ZstdFrameIndex
    {
        let before = try BlobContentIdentity(ofFileAtPath: path)
        let frames = try decodeFrames(
            of: OffsetReadSource(try PositionalFile(path: path)), name: path, windowLog: windowLog)
        let after = try BlobContentIdentity(ofFileAtPath: path)
        guard before == after, frames.compressedLength <= after.size else {
            throw BlobStreamError(.changed, "'\(path)': the file changed while it was indexed")
        }
        return ZstdFrameIndex(frames: frames, identity: after)
    }

    /// Indexes the zstd content `source` holds (new, not opened: it is read once, in order,
    /// and closed), `identity` being the content's (an object's size and strong ETag).
    ///
    /// - Throws: what `build(fileAtPath:windowLog:)` throws, naming `name`.
    public static func build(
        source: any BlobDataSource, name: String, identity: BlobContentIdentity,
        windowLog: Int = ZstdWindow.defaultLog
    ) throws(BlobStreamError) -> ZstdFrameIndex {
        let frames = try decodeFrames(of: source, name: name, windowLog: windowLog)
        guard frames.compressedLength <= identity.size else {
            throw BlobStreamError(.changed, "\(name): the object changed while it was indexed")
        }
        return ZstdFrameIndex(frames: frames, identity: identity)
    }

    /// Decodes `source` whole, recording its frames; refuses one of a single frame.
    static func decodeFrames(of source: any BlobDataSource, name: String, windowLog: Int) throws(BlobStreamError)
        -> ZstdSeekTable
    {
        let reader = BlobUpstreamReader(source)
        defer { reader.close() }
        reader.open()
        do {
            try reader.waitForOpen()
        } catch {
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed, "\(name): failed to open: \(error)", cause: error)
        }
        let zstd = ZstdReader(upstream: reader, name: name, windowLog: windowLog)
        zstd.recordsFrames = true
        defer { zstd.end() }
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { scratch.deallocate() }
        decoding: while true {
            switch zstd.decode(into: scratch, capacity: 256 << 10) {
            case .bytes: continue
            case .end: break decoding
            case .failed(let error): throw error
            }
        }
        var frames = zstd.endedFrames
        while let last = frames.last, last.decompressedSize == 0, frames.count > 1 { frames.removeLast() }
        guard frames.filter({ $0.decompressedSize > 0 }).count > 1 else {
            throw BlobStreamError(
                .unsupported,
                "\(name) is one zstd frame: it cannot be entered midway, so it gets no index; make a copy in frames with ZstdSeekableCompressor"
            )
        }
        guard let table = ZstdSeekTable(frames: frames) else {
            throw BlobStreamError(.sourceFailed, "\(name): its zstd frames do not follow one another")
        }
        return table
    }

    // MARK: - The file

    /// The index file's bytes (see "The file").
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + frames.frames.count * (ZstdSeekTable.recordSize + Self.placedRecordSize))
        func put(_ value: UInt64, _ count: Int) {
            for i in 0..<count { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
        }
        out += Self.magic
        put(UInt64(Self.formatVersion), 2)
        put(0, 2)
        put(UInt64(bitPattern: identity.size), 8)
        put(UInt64(bitPattern: identity.modified.seconds), 8)
        put(UInt64(UInt32(truncatingIfNeeded: identity.modified.nanoseconds)), 4)
        let samples = identity.sampleCRC32s.prefix(Self.maximumSamples)
        put(UInt64(samples.count), 4)
        let tag = Array((identity.entityTag ?? "").utf8.prefix(Self.maximumEntityTagLength))
        put(UInt64(tag.count), 2)
        out += tag
        put(UInt64(frames.frames.count), 8)
        frames.appendRecords(to: &out)
        for frame in frames.frames {
            out.append(frame.placedChecksum == nil ? 0 : 1)
            put(UInt64(frame.placedChecksum ?? 0), 4)
        }
        for crc in samples { put(UInt64(crc), 4) }
        let crc = out.withUnsafeBytes { ZlibCRC32.update(0, $0) }
        put(UInt64(crc), 4)
        return out
    }

    /// Decodes an index file's bytes; `name` names it in errors. A seal at their end
    /// (`IndexSeal`) is set aside unchecked, as every reader without a key does.
    ///
    /// - Throws: `BlobStreamError` `.corrupt` (truncated, altered, not a zstd frame index:
    ///   the message says what), `.unsupported` (another version).
    public init(decoding sealedOrNot: [UInt8], name: String) throws(BlobStreamError) {
        let bytes = IndexSeal.withoutSeal(sealedOrNot)
        func bad(_ what: String) -> BlobStreamError {
            BlobStreamError(.corrupt, "zstd frame index '\(name)' is damaged: \(what)")
        }
        guard bytes.count >= 8 + 4 + 24 + 2 + 8 + 4 else {
            throw bad("it is \(bytes.count) bytes long, shorter than any index")
        }
        guard bytes.starts(with: Self.magic) else { throw bad("it is not a zstd frame index (no BLOBZIDX header)") }
        var position = 8
        func take(_ count: Int) -> UInt64 {
            var value: UInt64 = 0
            for i in 0..<count { value |= UInt64(bytes[position + i]) << (8 * UInt64(i)) }
            position += count
            return value
        }
        let end = bytes.count - 4
        let stored =
            UInt32(bytes[end]) | UInt32(bytes[end + 1]) << 8 | UInt32(bytes[end + 2]) << 16 | UInt32(bytes[end + 3])
            << 24
        let computed = bytes[..<end].withUnsafeBytes { ZlibCRC32.update(0, $0) }
        let version = UInt16(take(2))
        guard version == Self.formatVersion else {
            let why = version == 1 ? " (made before its frames' places were checked)" : ""
            throw BlobStreamError(
                .unsupported,
                "zstd frame index '\(name)' is version \(version)\(why); this library reads version \(Self.formatVersion): build it again (ZstdFrameIndex.build)"
            )
        }
        guard stored == computed else { throw bad("its checksum does not match (truncated or altered)") }
        _ = take(2)
        let size = Int64(bitPattern: take(8))
        let modified = BlobContentIdentity.Timestamp(
            seconds: Int64(bitPattern: take(8)), nanoseconds: Int64(UInt32(take(4))))
        let sampleCount = Int(take(4))
        let tagLength = Int(take(2))
        guard size >= 0, sampleCount <= Self.maximumSamples, tagLength <= Self.maximumEntityTagLength,
            tagLength + 8 <= end - position
        else { throw bad("its identity does not add up") }
        let tagBytes = Array(bytes[position..<(position + tagLength)])
        position += tagLength
        let count = take(8)
        let perFrame = ZstdSeekTable.recordSize + Self.placedRecordSize
        guard count > 1, count <= UInt64((end - position) / perFrame),
            Int(count) * perFrame + 4 * sampleCount == end - position
        else { throw bad("it claims \(count) frames and \(sampleCount) samples, not what its bytes hold") }
        let records = try ZstdSeekTable(
            records: Int(count), fileSize: size, take: { (n: Int) throws(BlobStreamError) in take(n) }, bad: bad)
        var placed = records.frames
        for k in placed.indices {
            let flags = take(1)
            let checksum = UInt32(take(4))
            guard flags & ~1 == 0 else { throw bad("frame \(k)'s placed checksum has unknown flags \(flags)") }
            placed[k].placedChecksum = flags == 1 ? checksum : nil
        }
        guard let table = ZstdSeekTable(frames: placed) else { throw bad("its zstd frames do not follow one another") }
        var samples: [UInt32] = []
        for _ in 0..<sampleCount { samples.append(UInt32(take(4))) }
        var identity = BlobContentIdentity(size: size, modified: modified, sampleCRC32s: samples)
        if tagLength > 0 {
            guard let tag = String(validating: tagBytes, as: UTF8.self) else { throw bad("its ETag is not UTF-8") }
            identity.entityTag = tag
        }
        self.init(frames: table, identity: identity)
        self.name = name
    }

    /// Writes `encoded()` to `path` (replacing a regular file there, atomically).
    ///
    /// - Throws: `BlobStreamError` `.ioFailed` naming the path; `.unsupported` when a FIFO, a
    ///   device, a socket or a folder is there.
    public func write(toPath path: String) throws(BlobStreamError) {
        try WriteDestination.check(path, role: "the zstd frame index")
        let written = encoded().withUnsafeBytes { AtomicFileWrite.write($0, to: path) }
        if case .failure(let failure) = written {
            throw failure.error("a temporary file beside '\(path)'", context: "cannot write the zstd frame index")
        }
    }

    /// The longest index file read (about 3 million frames).
    static let maximumFileSize = 64 << 20
}

extension ZstdFrameIndex: LocatableIndex, KeptIndexFileReading {
    /// What `lookUp(forFileAtPath:indexPath:)` and `lookUp(for:at:indexURL:cache:makeSource:)`
    /// found.
    public typealias LookUp = IndexLookUp<ZstdFrameIndex>

    /// `.zstd`: sidecars and cache entries end in `.zstidx`.
    public static var kind: IndexCache.Kind { .zstd }

    /// 256 KiB: the whole index of about 12,000 frames in the first answer.
    public static var leadingReadLength: Int { 256 << 10 }

    /// `identity`.
    public var madeFor: BlobContentIdentity? { identity }

    /// nil: the identity records the size.
    public var indexedSourceSize: Int64? { nil }

    /// Reads the index file at `path`.
    public static func read(indexFileAt path: String) throws(BlobStreamError) -> ZstdFrameIndex {
        try read(keptFile: PositionalFile(path: path, label: "zstd frame index '\(path)'"), path: path)
    }

    package static func read(keptFile: PositionalFile, path: String) throws(BlobStreamError) -> ZstdFrameIndex {
        let size = try keptFile.size()
        guard size <= Int64(maximumFileSize) else {
            throw BlobStreamError(.corrupt, "zstd frame index '\(path)' is \(size) bytes long, longer than any index")
        }
        // A seal at its end (`IndexSeal`) is set aside.
        return try ZstdFrameIndex(
            decoding: IndexSeal.withoutSeal(keptFile.bytes(count: Int(size), at: 0, what: "the zstd frame index")),
            name: path)
    }

    package static func decode(wholeIndex bytes: [UInt8], name: String) throws(BlobStreamError) -> ZstdFrameIndex {
        try ZstdFrameIndex(decoding: bytes, name: name)
    }

    /// Reads the index an object holds (all of it: a few bytes a frame), and closes `source`.
    public init(readingFrom source: any BlobRangeReading, name: String) throws(BlobStreamError) {
        if source.length == nil { _ = try source.contentIdentity() } // waits for the first answer
        guard let length = source.length, length <= Int64(Self.maximumFileSize) else {
            source.close()
            throw BlobStreamError(
                .unsupported, "\(name): the index's length is unknown or over \(Self.maximumFileSize) bytes")
        }
        let store = SourceIndexBytes(source, label: "zstd frame index '\(name)'", prefixLength: Self.leadingReadLength)
        let bytes = try store.bytes(count: Int(length), at: 0, what: "the zstd frame index")
        source.close()
        try self.init(decoding: IndexSeal.withoutSeal(bytes), name: name)
    }
}
