import BlobStream
import BlobStreamChecksums

/// The seek table of a file in zstd's seekable format (facebook/zstd's
/// `contrib/seekable_format`; written by `blobstream compress --seekable`, pyzstd's
/// `SeekableZstdFile`, t2sz): each frame's compressed and decompressed size, and optionally
/// a checksum of its bytes, in a skippable frame at the file's end. A reader that has it
/// enters the file at the frame that holds an offset instead of decoding from the start.
///
/// ## What is checked, and what is trusted
/// A table is accepted only when its numbers add up: its frame's size field, its entry
/// count and its footer agree, its reserved bits are 0, and the compressed sizes add up to
/// exactly the bytes before the table. Each frame entered through it is checked as it is
/// decoded: it starts where the table says, and ends after exactly its compressed and
/// decompressed sizes, with the table's checksum as its own; a frame that has no checksum of
/// its own (the format's reference writer makes them so) is hashed as it is decoded (XXH64)
/// and checked against the table's, whether entered at an offset or read from the start.
///
/// The decompressed sizes of the frames before an entered one cannot be checked without
/// decoding them; they place the offset. So a table is used for random access only when it
/// is regular (`isRegular`): every frame but the last holds the same number of bytes, and
/// the last no more, as fixed-size writers make them. A changed size in a regular table
/// breaks that, so a damaged table is never used to hand out the bytes of another offset.
public struct ZstdSeekTable: Sendable, Equatable {
    /// One frame of the file, as the table places it.
    public struct Frame: Sendable, Equatable {
        /// Where the frame starts in the file.
        public var compressedOffset: Int64
        /// The frame's size in the file.
        public var compressedSize: Int64
        /// The decompressed offset of its first byte.
        public var decompressedOffset: Int64
        /// How many bytes it decodes to.
        public var decompressedSize: Int64
        /// The low 32 bits of the XXH64 of its bytes (the frame's own content checksum), when
        /// the table has checksums.
        public var checksum: UInt32?
        /// The low 32 bits of the XXH64 of its bytes seeded with its decompressed offset, when
        /// a frame index recorded it (`ZstdFrameIndex`; a seek table has none): it binds the
        /// bytes to their place, so that a frame entered at another offset than the one it
        /// was decoded at (an earlier frame's size changed) fails its check.
        public var placedChecksum: UInt32?

        /// Whether both place the same bytes: offsets, sizes and checksum. `placedChecksum` is
        /// not compared: it follows from the bytes the rest places, and an index kept in a
        /// format without it (an archive index's frames) equals the one it was made from.
        public static func == (lhs: Frame, rhs: Frame) -> Bool {
            lhs.compressedOffset == rhs.compressedOffset && lhs.compressedSize == rhs.compressedSize
                && lhs.decompressedOffset == rhs.decompressedOffset && lhs.decompressedSize == rhs.decompressedSize
                && lhs.checksum == rhs.checksum
        }

        /// Makes one.
        public init(
            compressedOffset: Int64, compressedSize: Int64, decompressedOffset: Int64, decompressedSize: Int64,
            checksum: UInt32?, placedChecksum: UInt32? = nil
        ) {
            self.compressedOffset = compressedOffset
            self.compressedSize = compressedSize
            self.decompressedOffset = decompressedOffset
            self.decompressedSize = decompressedSize
            self.checksum = checksum
            self.placedChecksum = placedChecksum
        }
    }

    /// The frames, in file order.
    public let frames: [Frame]
    /// Whether the entries carry checksums (the descriptor's checksum flag).
    public let hasChecksums: Bool

    /// The magic number of a skippable frame that holds a seek table.
    public static let skippableMagic: UInt32 = 0x184D_2A5E
    /// The magic number at the end of the table's footer: the file's last 4 bytes.
    public static let seekableMagic: UInt32 = 0x8F92_EAB1
    /// The footer's size: the frame count, the descriptor and the magic number.
    public static let footerSize = 9
    /// The largest table frame read (about 5.6 million frames with checksums).
    public static let maximumTableSize = 64 << 20

    /// Makes a table of frames in file order (what a writer records).
    public init(sizes: [(compressed: UInt32, decompressed: UInt32, checksum: UInt32?)]) {
        var frames: [Frame] = []
        frames.reserveCapacity(sizes.count)
        var compressed: Int64 = 0
        var decompressed: Int64 = 0
        for size in sizes {
            frames.append(
                Frame(
                    compressedOffset: compressed, compressedSize: Int64(size.compressed),
                    decompressedOffset: decompressed, decompressedSize: Int64(size.decompressed),
                    checksum: size.checksum))
            compressed += Int64(size.compressed)
            decompressed += Int64(size.decompressed)
        }
        self.frames = frames
        self.hasChecksums = sizes.allSatisfy { $0.checksum != nil } && !sizes.isEmpty
    }

    /// Makes a table of `frames` as a decoding pass found them (an archive index's): each must
    /// start where the one before it ends, from offset 0 in both the file and the
    /// decompressed bytes; nil when they do not. Skippable frames are entries that decode to
    /// 0 bytes. `hasChecksums` when every frame with bytes has a checksum.
    public init?(frames: [Frame]) {
        var compressed: Int64 = 0
        var decompressed: Int64 = 0
        for frame in frames {
            guard frame.compressedOffset == compressed, frame.decompressedOffset == decompressed,
                frame.compressedSize > 0, frame.decompressedSize >= 0,
                frame.compressedSize <= Int64.max - compressed, frame.decompressedSize <= Int64.max - decompressed
            else { return nil }
            compressed += frame.compressedSize
            decompressed += frame.decompressedSize
        }
        self.frames = frames
        self.hasChecksums = !frames.isEmpty && frames.allSatisfy { $0.decompressedSize == 0 || $0.checksum != nil }
    }

    /// The size of a frame's record in an index file of this library (`appendRecords(to:)`).
    package static let recordSize = 8 + 8 + 1 + 4

    /// Appends each frame's record, little-endian, as an index file of this library keeps
    /// its frames: compressed size u64 | decompressed size u64 | flags u8 (1 checksum) |
    /// checksum u32. Offsets are not written: the frames follow one another from 0.
    package func appendRecords(to out: inout [UInt8]) {
        func put(_ value: UInt64, _ count: Int) {
            for i in 0..<count { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
        }
        for frame in frames {
            put(UInt64(frame.compressedSize), 8)
            put(UInt64(frame.decompressedSize), 8)
            out.append(frame.checksum == nil ? 0 : 1)
            put(UInt64(frame.checksum ?? 0), 4)
        }
    }

    /// Reads `count` frame records (`appendRecords(to:)`) through `take` (the next `n` bytes,
    /// little-endian), each checked to lie inside a file of `fileSize` bytes; `bad` makes the
    /// error that says what does not.
    package init<E: Error>(
        records count: Int, fileSize: Int64, take: (Int) throws(E) -> UInt64, bad: (String) -> E
    ) throws(E) {
        var frames: [Frame] = []
        frames.reserveCapacity(count)
        var compressed: Int64 = 0
        var decompressed: Int64 = 0
        for k in 0..<count {
            let compressedSize = try take(8)
            let decompressedSize = try take(8)
            let flags = UInt8(try take(1))
            let checksum = UInt32(try take(4))
            guard compressedSize > 0, compressedSize <= UInt64(fileSize - compressed), flags & ~1 == 0,
                decompressedSize <= UInt64(Int64.max - decompressed)
            else { throw bad("zstd frame \(k) lies outside the \(fileSize)-byte file") }
            frames.append(
                Frame(
                    compressedOffset: compressed, compressedSize: Int64(compressedSize),
                    decompressedOffset: decompressed, decompressedSize: Int64(decompressedSize),
                    checksum: flags & 1 != 0 ? checksum : nil))
            compressed += Int64(compressedSize)
            decompressed += Int64(decompressedSize)
        }
        guard let table = ZstdSeekTable(frames: frames) else { throw bad("its zstd frames do not follow one another") }
        self = table
    }

    /// A table of `frames` placed one after another from offset 0 (their sizes and checksums
    /// as given, their offsets made again); nil when a size is not positive.
    package static func placing(_ frames: [Frame]) -> ZstdSeekTable? {
        var placed = frames
        var compressed: Int64 = 0
        var decompressed: Int64 = 0
        for i in placed.indices {
            placed[i].compressedOffset = compressed
            placed[i].decompressedOffset = decompressed
            compressed += placed[i].compressedSize
            decompressed += placed[i].decompressedSize
        }
        return ZstdSeekTable(frames: placed)
    }

    /// The bytes before the table: where its skippable frame starts.
    public var compressedLength: Int64 { frames.last.map { $0.compressedOffset + $0.compressedSize } ?? 0 }

    /// The decompressed length of the whole file.
    public var decompressedLength: Int64 { frames.last.map { $0.decompressedOffset + $0.decompressedSize } ?? 0 }

    /// Whether every frame but the last decodes to the same number of bytes (more than 0),
    /// and the last to no more (see "What is checked, and what is trusted").
    public var isRegular: Bool {
        guard let first = frames.first, first.decompressedSize > 0 else { return false }
        let size = first.decompressedSize
        for frame in frames.dropLast() where frame.decompressedSize != size { return false }
        let last = frames[frames.count - 1].decompressedSize
        return last > 0 && last <= size
    }

    /// The index of the frame that starts at compressed `offset`, or nil when none does.
    public func frameIndex(startingAt offset: Int64) -> Int? {
        var low = 0
        var high = frames.count
        while low < high {
            let middle = (low + high) / 2
            if frames[middle].compressedOffset < offset { low = middle + 1 } else { high = middle }
        }
        return low < frames.count && frames[low].compressedOffset == offset ? low : nil
    }

    /// The index of the frame that holds decompressed `offset`, or nil at or past the end.
    public func frameIndex(containing offset: Int64) -> Int? {
        guard offset >= 0, offset < decompressedLength else { return nil }
        var low = 0
        var high = frames.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if frames[middle].decompressedOffset <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }

    // MARK: - Reading

    /// The size of the whole table frame (its skippable header included) that the file's
    /// last `footerSize` bytes announce; nil when they do not end with the seekable magic
    /// number (not a seekable file).
    public static func tableFrameSize(
        footer: UnsafeRawBufferPointer, fileLength: Int64, name: String
    ) throws(BlobStreamError) -> Int? {
        guard footer.count == footerSize, readUInt32(footer, at: 5) == seekableMagic else { return nil }
        let count = Int64(readUInt32(footer, at: 0))
        let descriptor = footer[4]
        let tableOffset = fileLength - Int64(footerSize)
        guard descriptor & 0x7C == 0 else {
            throw BlobStreamError(
                .unsupported,
                "\(name): the seek table's descriptor at offset \(tableOffset + 4) sets reserved bits (\(descriptor)): a newer seekable format"
            )
        }
        let entrySize: Int64 = descriptor & 0x80 != 0 ? 12 : 8
        let size = 8 + count * entrySize + Int64(footerSize)
        guard size <= Int64(maximumTableSize) else {
            throw BlobStreamError(
                .unsupported,
                "\(name): the seek table at the end announces \(count) frames (\(size) bytes), over the limit of \(maximumTableSize) bytes"
            )
        }
        guard size <= fileLength else {
            throw BlobStreamError(
                .corrupt,
                "\(name): the seek table's footer at offset \(tableOffset) announces \(count) frames, more than the file's \(fileLength) bytes hold"
            )
        }
        return Int(size)
    }

    /// Reads the table frame (`tableFrameSize` bytes, the file's last) of a file of
    /// `fileLength` bytes, and checks that it adds up.
    public init(tableFrame bytes: UnsafeRawBufferPointer, fileLength: Int64, name: String) throws(BlobStreamError) {
        let start = fileLength - Int64(bytes.count)
        func corrupt(_ what: String) -> BlobStreamError {
            BlobStreamError(.corrupt, "\(name): the seek table at offset \(start) is damaged: \(what)")
        }
        guard bytes.count >= 8 + Self.footerSize else { throw corrupt("\(bytes.count) bytes is too short") }
        guard Self.readUInt32(bytes, at: 0) == Self.skippableMagic else {
            throw corrupt("it does not start with a skippable frame's magic number")
        }
        guard Int(Self.readUInt32(bytes, at: 4)) == bytes.count - 8 else {
            throw corrupt(
                "its frame announces \(Self.readUInt32(bytes, at: 4)) bytes, its footer \(bytes.count - 8)")
        }
        let footer = bytes.count - Self.footerSize
        let count = Int(Self.readUInt32(bytes, at: footer))
        let checksums = bytes[footer + 4] & 0x80 != 0
        let entrySize = checksums ? 12 : 8
        guard 8 + count * entrySize == footer else {
            throw corrupt("\(count) entries of \(entrySize) bytes do not fill its \(footer - 8) bytes")
        }
        var sizes: [(compressed: UInt32, decompressed: UInt32, checksum: UInt32?)] = []
        sizes.reserveCapacity(count)
        var at = 8
        for _ in 0..<count {
            sizes.append(
                (
                    Self.readUInt32(bytes, at: at), Self.readUInt32(bytes, at: at + 4),
                    checksums ? Self.readUInt32(bytes, at: at + 8) : nil
                ))
            at += entrySize
        }
        self.init(sizes: sizes)
        guard compressedLength == start else {
            throw corrupt(
                "its frames' compressed sizes add up to \(compressedLength) bytes, but the table starts at \(start)")
        }
        for (index, frame) in frames.enumerated() where frame.compressedSize == 0 {
            throw corrupt("frame \(index) has a compressed size of 0")
        }
    }

    // MARK: - Writing

    /// The table frame's bytes, to append after the frames: with checksums when every frame
    /// has one.
    public func encoded() -> [UInt8] {
        let entrySize = hasChecksums ? 12 : 8
        let body = frames.count * entrySize + Self.footerSize
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8 + body)
        Self.append(Self.skippableMagic, to: &bytes)
        Self.append(UInt32(body), to: &bytes)
        for frame in frames {
            Self.append(UInt32(frame.compressedSize), to: &bytes)
            Self.append(UInt32(frame.decompressedSize), to: &bytes)
            if hasChecksums { Self.append(frame.checksum ?? 0, to: &bytes) }
        }
        Self.append(UInt32(frames.count), to: &bytes)
        bytes.append(hasChecksums ? 0x80 : 0)
        Self.append(Self.seekableMagic, to: &bytes)
        return bytes
    }

    // MARK: - Little-endian fields

    static func readUInt32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }

    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
}
