import BlobStream
import BlobStreamSystem

/// A seek-point index of a gzip file: where, in the compressed bytes, decoding can start
/// again without inflating everything before (a deflate block boundary and the 32 KiB of
/// output before it), so that reading at an offset costs a seek plus at most `spacing`
/// bytes of inflating.
///
/// ```swift
/// let index = try GzipIndex.build(fileAtPath: "big.bin.gz")
/// try index.write(toPath: "big.bin.gz.gzidx")            // only when asked
/// let source = GzipDataSource(upstream: FileDataSource(path: "big.bin.gz"), index: index)
/// try source.seek(to: 900 << 20)                          // jumps to the nearest seek point
/// ```
///
/// ## What it holds
/// - One seek point at the start of every member's deflate data (no window needed) and one
///   at the first block boundary after every `spacing` uncompressed bytes (with its window),
///   as indexed_gzip places them, so multi-member files are indexed whole.
/// - The CRC-32 of every chunk (the uncompressed bytes from one seek point to the next, the
///   last one to the end): a read that decodes a chunk whole checks it.
/// - The file it describes (`identity`): its size, modification time and CRC-32s of a few
///   4 KiB samples of its compressed bytes; an index whose identity does not match a file is
///   never used on it.
///
/// ## On disk
/// `write(toPath:)` / `serialized()` write indexed_gzip's GZIDX format (version 1, as
/// indexed_gzip 1.10 writes it; read by indexed_gzip's `import_index` and by rapidgzip),
/// followed by BlobStream's own record (identity and chunk CRC-32s). indexed_gzip's
/// importer ignores bytes after the GZIDX data, so the file stays readable by it. A GZIDX
/// file written by another tool has no such record ("foreign"): it is used only when the
/// user names it. The library never writes an index file unless asked.
public struct GzipIndex: Sendable, Equatable {
    /// A place where decoding can start.
    public struct SeekPoint: Sendable, Equatable {
        /// The offset in the uncompressed bytes of the first byte decoded from here.
        public var uncompressedOffset: Int64
        /// The offset in the compressed bytes of the first whole byte of the deflate data.
        public var compressedOffset: Int64
        /// How many bits (0...7) of the byte before `compressedOffset` belong to the data
        /// here (its high bits).
        public var bitOffset: Int
        /// The 32 KiB of uncompressed bytes before the point (deflate's window); nil at the
        /// start of a member, where none is needed.
        ///
        /// An index read from a file (`GzipIndex.read(fromPath:)`) leaves its windows in the
        /// file until they are asked for: this property then reads the window from the file.
        /// It cannot throw: should the file have become unreadable there (cut after it was
        /// loaded), it is empty. `loadWindow()` throws instead, and the library's own
        /// decoding uses that; `hasWindow` tells nil from a window without reading it.
        public var window: [UInt8]? {
            get {
                switch windowStorage {
                case .none: nil
                case .bytes(let bytes): bytes
                case .stored(let file, let offset):
                    (try? file.bytes(count: GzipIndex.windowSize, at: offset, what: "gzip index")) ?? []
                }
            }
            set { windowStorage = newValue.map { .bytes($0) } ?? .none }
        }
        /// The CRC-32 of the uncompressed bytes from this point to the next (or to the
        /// end); nil in an index written by another tool.
        public var chunkCRC32: UInt32?
        /// Where the window is: nowhere (a member's start), in memory, or in the index file.
        var windowStorage: WindowStorage

        /// Makes a seek point.
        public init(
            uncompressedOffset: Int64, compressedOffset: Int64, bitOffset: Int, window: [UInt8]?,
            chunkCRC32: UInt32?
        ) {
            self.uncompressedOffset = uncompressedOffset
            self.compressedOffset = compressedOffset
            self.bitOffset = bitOffset
            self.windowStorage = window.map { .bytes($0) } ?? .none
            self.chunkCRC32 = chunkCRC32
        }

        /// Whether decoding from here needs a window (false at a member's start); reads nothing.
        public var hasWindow: Bool {
            if case .none = windowStorage { return false }
            return true
        }

        /// The window (nil at a member's start), read from the index file if it is still there.
        ///
        /// - Throws: `.corrupt` when the index file was cut after it was loaded (naming it and
        ///   the offset), `.ioFailed` when it cannot be read.
        public func loadWindow() throws(BlobStreamError) -> [UInt8]? {
            switch windowStorage {
            case .none: nil
            case .bytes(let bytes): bytes
            case .stored(let file, let offset):
                try file.bytes(count: GzipIndex.windowSize, at: offset, what: "gzip index")
            }
        }

        /// Equal offsets, CRC-32 and window bytes (a window left in its file is read to compare).
        public static func == (a: SeekPoint, b: SeekPoint) -> Bool {
            a.uncompressedOffset == b.uncompressedOffset && a.compressedOffset == b.compressedOffset
                && a.bitOffset == b.bitOffset && a.chunkCRC32 == b.chunkCRC32 && a.hasWindow == b.hasWindow
                && (!a.hasWindow || a.window == b.window)
        }
    }

    /// Where a seek point's window is.
    enum WindowStorage: Sendable {
        /// No window: the start of a member.
        case none
        /// In memory.
        case bytes([UInt8])
        /// In an index file or object, at a byte offset: read when a decode needs it.
        case stored(any IndexByteStore, offset: Int64)
    }

    /// indexed_gzip's default spacing, 4 MiB: an index of 1 GiB holds 256 windows (8 MiB,
    /// 0.8 %). Below about 1.6 MiB the windows alone exceed 2 % of the uncompressed size.
    public static let defaultSpacing = 4 * 1024 * 1024

    /// The size of deflate's window, which every seek point but a member's start carries.
    public static let windowSize = 32 * 1024

    /// The least uncompressed distance between two seek points with a window.
    public var spacing: Int
    /// The size of the compressed bytes (the whole file).
    public var compressedSize: Int64
    /// The size of the uncompressed bytes (all members).
    public var uncompressedSize: Int64
    /// The seek points, in increasing order of both offsets.
    public var points: [SeekPoint]
    /// The file this index describes; nil for an index built from a source that is not a
    /// file, or read from a foreign GZIDX file.
    public var identity: BlobContentIdentity?

    /// Makes an index from its parts.
    public init(
        spacing: Int, compressedSize: Int64, uncompressedSize: Int64, points: [SeekPoint],
        identity: BlobContentIdentity?
    ) {
        self.spacing = spacing
        self.compressedSize = compressedSize
        self.uncompressedSize = uncompressedSize
        self.points = points
        self.identity = identity
    }

    /// Every chunk has its CRC-32 (an index BlobStream built; a foreign one has none).
    public var hasChunkCRC32s: Bool { !points.isEmpty && points.allSatisfy { $0.chunkCRC32 != nil } }

    /// The index of the last seek point at or before `offset` (nil when there is none).
    public func pointIndex(atOrBefore offset: Int64) -> Int? {
        var low = 0
        var high = points.count - 1
        var found: Int?
        while low <= high {
            let mid = (low + high) / 2
            if points[mid].uncompressedOffset <= offset {
                found = mid
                low = mid + 1
            } else {
                high = mid - 1
            }
        }
        return found
    }

    /// Where chunk `i` ends: the next point's uncompressed offset, or the end.
    func chunkEnd(_ i: Int) -> Int64 {
        i + 1 < points.count ? points[i + 1].uncompressedOffset : uncompressedSize
    }
}
