import BlobStream
import BlobStreamCompression
import BlobStreamSystem
import Foundation

/// A member index of an archive: where each member's header and bytes are, made in one pass,
/// so that opening a member is a lookup and a read of its bytes where they are, and listing
/// reads no header at all.
///
/// ```swift
/// let index = try ArchiveIndex.build(archiveAt: "/data/photos.tar")
/// try index.write(to: ArchiveIndex.sidecar(of: "/data/photos.tar"))
/// // later, in any process: found beside the archive and used when it matches
/// let member = ArchiveMemberDataSource(archive: "/data/photos.tar", member: "DCIM/IMG_0001.JPG")
/// ```
///
/// Formats: an uncompressed tar (ustar, GNU, pax; one walk over its headers, and a read of
/// every member's bytes for its CRC-32), a zip (its central directory and each local
/// header) and a tar.gz (one inflating pass that places the gzip seek points — a
/// `GzipIndex`, kept in `gzipIndex` — and walks the tar headers in the inflated bytes,
/// computing each member's CRC-32; offsets are then offsets in the inflated tar, and
/// `seekPoint` names the seek point at or before the member's data), a tar.xz (the file's
/// own xz block index places the members) and a tar.zst (one decoding pass records every
/// zstd frame, kept in `zstdFrames`; a member is read from the frame that holds its header,
/// and one of several regular frames on several threads). A tar holding what the
/// header walker leaves to libarchive (sparse members, multi-volume parts, …) cannot be
/// indexed (`.unsupported`, naming the offset).
///
/// A tar.gz member read through the index is inflated from the seek point before it (ISA-L
/// when it loads, zlib otherwise), every gzip chunk decoded whole checked against its
/// CRC-32 in the gzip index and the member's bytes against theirs at its end: a damaged
/// byte fails the member with `.corrupt`, naming the member and the archive.
///
/// ## What protects a read through an index
/// - The index records what it indexes (`Identity`: the archive's size, modification time
///   and a CRC-32 of sampled bytes). An index that does not match its archive is never used:
///   one named by the user (`ArchiveIndexOption.index` / `.file`) is refused with `.changed`;
///   one found beside the archive (`.automatic`) is ignored, and the member is found by
///   walking the headers as without an index.
/// - Every tar member's CRC-32 is in the index: a read through the index checks it at the
///   member's end (`.changed` naming the member and the archive when the bytes differ from
///   those indexed). A zip member keeps its own CRC-32 (`.corrupt` on a mismatch).
/// - An index file is checked whole (a CRC-32 over it) before anything in it is believed;
///   counts and lengths are checked against the bytes there before anything is allocated.
///
/// ## The file
/// `ARCHIVE.blobidx` beside the archive (`sidecar(of:)`): a versioned binary
/// format of this library (see `encoded()`). A tar.gz's index file is whole on its own: it
/// embeds the gzip seek-point index (in its GZIDX form) after the members. The library keeps indexes in memory and writes
/// a file only when asked (`write(to:)`, `blobstream index`).
public struct ArchiveIndex: Sendable, Equatable {
    /// The container the index describes.
    public enum Format: UInt8, Sendable, Equatable {
        /// An uncompressed tar (ustar, GNU, pax).
        case tar = 1
        /// A zip archive (its central directory).
        case zip = 2
        /// A tar compressed with gzip (one or more gzip members): member offsets are in the
        /// inflated tar; the index carries the gzip seek points (`gzipIndex`).
        case tarGzip = 3
        /// A tar compressed with xz: member offsets are in the decompressed tar; a member is
        /// read from the xz block that holds its data (the file's own xz index lists the
        /// blocks). A file written as one block (`xz` with one thread) is then decoded from
        /// its start: `xz -T0` or `--block-size` write many. liblzma verifies each block's
        /// check at the block's end and the member's CRC-32 is checked at its end, so a damaged
        /// block fails the member (`.corrupt`); bytes of that block may have been delivered
        /// before the error, but the read never ends cleanly.
        case tarXz = 4
        /// A tar compressed with zstd: member offsets are in the decompressed tar; the index
        /// records every zstd frame (`zstdFrames`), and a member is read from the frame that
        /// holds its header, each frame from there checked against that record and by its own
        /// content checksum. A file written as one frame (`zstd` alone) is decoded from its
        /// start; one in many frames (`blobstream compress --seekable`, pyzstd, t2sz, `pzstd`)
        /// is entered at the member, and a member of several regular frames is decoded on
        /// several threads.
        case tarZstd = 5
    }

    /// One member, as the index describes it.
    public struct Member: Sendable, Equatable {
        /// The stored name's bytes (a leading `./` kept).
        public var nameBytes: [UInt8]
        /// What the member is.
        public var type: ArchiveEntry.EntryType
        /// The member's size (uncompressed).
        public var size: Int64
        /// The permission bits.
        public var mode: UInt32
        /// The modification time: seconds since 1970.
        public var modificationSeconds: Int64
        /// The nanoseconds of the modification time.
        public var modificationNanoseconds: Int32
        /// A link's target bytes (empty when not a link).
        public var linkTargetBytes: [UInt8]
        /// Archive offset of the member's first header (tar: its extension headers included;
        /// zip: its local header).
        public var headerOffset: Int64
        /// Archive offset of the member's first stored byte.
        public var dataOffset: Int64
        /// The CRC-32 of the member's bytes (tar: computed while indexing; zip: the
        /// central directory's); nil when there is none (links, directories).
        public var crc32: UInt32?
        /// Zip: the compression method (0 stored, 8 deflate, …); nil for tar.
        public var compressionMethod: UInt16?
        /// Zip: the stored (compressed) size; nil for tar.
        public var compressedSize: Int64?
        /// The entry is encrypted (zip).
        public var isEncrypted: Bool
        /// For a tar.gz: the number of the gzip seek point at or before the member's data
        /// (`gzipIndex.points[seekPoint]`), where a read of the member starts inflating. Nil
        /// for the other formats.
        public var seekPoint: Int64?

        /// Makes one.
        public init(
            nameBytes: [UInt8], type: ArchiveEntry.EntryType, size: Int64, mode: UInt32, modificationSeconds: Int64,
            modificationNanoseconds: Int32, linkTargetBytes: [UInt8], headerOffset: Int64, dataOffset: Int64,
            crc32: UInt32?, compressionMethod: UInt16? = nil, compressedSize: Int64? = nil, isEncrypted: Bool = false,
            seekPoint: Int64? = nil
        ) {
            self.nameBytes = nameBytes
            self.type = type
            self.size = size
            self.mode = mode
            self.modificationSeconds = modificationSeconds
            self.modificationNanoseconds = modificationNanoseconds
            self.linkTargetBytes = linkTargetBytes
            self.headerOffset = headerOffset
            self.dataOffset = dataOffset
            self.crc32 = crc32
            self.compressionMethod = compressionMethod
            self.compressedSize = compressedSize
            self.isEncrypted = isEncrypted
            self.seekPoint = seekPoint
        }

        /// The member as `ArchiveListing` describes entries.
        public var entry: ArchiveEntry {
            let isLink = type == .hardLink || type == .symbolicLink
            return ArchiveEntry(
                path: String(decoding: nameBytes, as: UTF8.self), size: size, type: type,
                mtime: Date(
                    timeIntervalSince1970: Double(modificationSeconds) + Double(modificationNanoseconds) / 1e9),
                linkTarget: isLink ? String(decoding: linkTargetBytes, as: UTF8.self) : nil, isEncrypted: isEncrypted,
                pathBytes: nameBytes, permissions: mode & 0o7777)
        }
    }

    /// The container.
    public var format: Format
    /// What the index was made from.
    public var identity: BlobContentIdentity
    /// The members, in the archive's order.
    public var members: [Member]
    /// For a tar.gz: the seek-point index of its gzip stream (with every chunk's CRC-32 and
    /// the file's identity), made in the same pass as the members. Nil for the other formats.
    public var gzipIndex: GzipIndex?
    /// For a tar.zst: its zstd frames as the indexing pass decoded them (skippable ones
    /// included, as frames of 0 bytes), each with its content checksum when it has one. Nil
    /// for the other formats.
    public var zstdFrames: ZstdSeekTable?

    /// Makes one.
    public init(
        format: Format, identity: BlobContentIdentity, members: [Member], gzipIndex: GzipIndex? = nil,
        zstdFrames: ZstdSeekTable? = nil
    ) {
        self.format = format
        self.identity = identity
        self.members = members
        self.gzipIndex = gzipIndex
        self.zstdFrames = zstdFrames
    }

    /// The entries, as `ArchiveListing.entries(ofArchiveAt:)` lists them.
    public var entries: [ArchiveEntry] { members.map(\.entry) }

    /// The first member whose normalized name (no leading `./`, no trailing `/`) is
    /// `nameBytes` normalized.
    public func member(named nameBytes: [UInt8]) -> Member? {
        let wanted = ArchiveMemberDataSource.normalized(nameBytes)
        return members.first { member in
            member.nameBytes.withUnsafeBufferPointer {
                $0[ArchiveMemberDataSource.normalizedBounds($0)].elementsEqual(wanted)
            }
        }
    }

    /// Indexes the archive at `path` (an uncompressed tar, a zip, a tar.gz, a tar.xz or a
    /// tar.zst).
    ///
    /// - Parameters:
    ///   - path: the archive file.
    ///   - gzipSpacing: for a tar.gz, the least uncompressed distance between the gzip seek
    ///     points (a member read inflates at most about this much before its data).
    ///   - engine: for a tar.gz, the inflater of the pass: by default ISA-L when it loads
    ///     (inflating then runs beside the tar walk, on a thread of its own), else zlib.
    /// - Throws: `BlobStreamError` naming the archive: `.unsupported` for other formats (and
    ///   tars with entries the walker leaves to libarchive), `.corrupt` (a bad header
    ///   checksum, a damaged central directory or gzip stream, naming the offset),
    ///   `.truncated`, `.changed` (the file changed during the pass), the file's own errors
    ///   (`.notFound`, …).
    public static func build(
        archiveAt path: String, gzipSpacing: Int = GzipIndex.defaultSpacing, engine: InflateEngine = .automatic
    ) throws -> ArchiveIndex {
        try withArchive(at: path) { archive, upstream in
            try build(archive, upstream: upstream, path: path, gzipSpacing: gzipSpacing, engine: engine)
        }
    }

    private static func build(
        _ archive: ArchiveOffsetReader, upstream: ArchiveFileSource, path: String, gzipSpacing: Int,
        engine: InflateEngine
    ) throws -> ArchiveIndex {
        let reader = archive.reader
        guard let modified = upstream.modified else {
            throw BlobStreamError(.sourceFailed, "archive '\(path)': its modification time is unknown")
        }
        let identity = try archive.identity(modified: modified)
        switch layout(of: archive) {
        case .gzip: return try buildTarGzip(path: path, identity: identity, spacing: gzipSpacing, engine: engine)
        case .xz: return try buildTarXz(path: path, identity: identity)
        case .zstd: return try buildTarZstd(path: path, identity: identity)
        case .tarOrZip:
            if let index = try tarOrZipIndex(archive, identity: identity) { return index }
        }
        throw BlobStreamError(
            .unsupported, "archive '\(path)': only tar, tar.gz, tar.xz, tar.zst and zip archives can be indexed")
    }

    /// How an archive to index starts: a gzip, an xz or a zstd stream (a compressed tar), or
    /// none of them.
    enum Layout { case gzip, xz, zstd, tarOrZip }

    /// The layout of the bytes `archive` reads, by their first bytes.
    static func layout(of archive: ArchiveOffsetReader) -> Layout {
        let reader = archive.reader
        for (layout, magic) in [(Layout.gzip, [0x1F, 0x8B, 0x08] as [UInt8]), (.xz, xzMagic), (.zstd, zstdMagic)]
        where archive.length >= magic.count {
            if (try? reader.seek(to: 0)) != nil,
                case .bytes(let head) = reader.fill(atLeast: magic.count, waiting: true),
                head.starts(with: magic)
            {
                return layout
            }
        }
        return .tarOrZip
    }

    /// The index of the plain tar or the zip `archive` reads; nil when it is neither.
    static func tarOrZipIndex(_ archive: ArchiveOffsetReader, identity: BlobContentIdentity) throws(BlobStreamError)
        -> ArchiveIndex?
    {
        if TarHeaderWalker.startsWithTarHeader(archive.reader, length: archive.length)
            || TarHeaderWalker.hasUstarMagic(archive.reader, length: archive.length)
        {
            return ArchiveIndex(format: .tar, identity: identity, members: try archive.tarMembers())
        }
        if let members = try archive.zipMembers() {
            return ArchiveIndex(format: .zip, identity: identity, members: members)
        }
        return nil
    }

    /// Opens the archive file at `path` and runs `body` with its reader (closed after).
    private static func withArchive<T>(
        at path: String, _ body: (ArchiveOffsetReader, ArchiveFileSource) throws -> T
    ) throws -> T {
        let upstream = ArchiveFileSource(path: path)
        let reader = LibArchiveInput.makeReader(upstream)
        defer { reader.close() }
        reader.open()
        if let error = upstream.error { throw error }
        return try body(ArchiveOffsetReader(reader: reader, length: upstream.length ?? 0, name: path), upstream)
    }

    /// Writes `encoded()` to `path` (replacing a regular file there, atomically).
    ///
    /// - Throws: `BlobStreamError` `.ioFailed` naming the path, with the system's error as
    ///   the cause; `.unsupported` when a FIFO, a device, a socket or a folder is there.
    public func write(to path: String) throws {
        try WriteDestination.check(path, role: "the archive index")
        // Written whole or not at all, and nothing left behind by a killed run.
        let written = encoded().withUnsafeBytes { AtomicFileWrite.write($0, to: path) }
        if case .failure(let failure) = written {
            throw failure.error("a temporary file beside '\(path)'", context: "cannot write archive index '\(path)'")
        }
    }

    /// Reads the index file at `path`.
    ///
    /// The file is checked whole (its CRC-32) through a small buffer and never held in
    /// memory; a tar.gz's gzip seek points leave their windows in the file, each read when a
    /// read through the index needs it (the index keeps the file open).
    ///
    /// - Throws: `BlobStreamError` naming the file: `.notFound` (no file), `.corrupt`
    ///   (truncated, altered, not an index), `.unsupported` (a version this library does
    ///   not read).
    public static func read(from path: String) throws -> ArchiveIndex {
        let file = try PositionalFile(path: path, label: "archive index '\(path)'")
        return try ArchiveIndex(decodingFile: ArchiveIndexFileBytes(file: file, path: path), name: path)
    }
}

extension ArchiveIndex.Format {
    /// How the format is named to people: `tar`, `zip`, `tar.gz`, `tar.xz`, `tar.zst`.
    public var name: String {
        switch self {
        case .tar: "tar"
        case .zip: "zip"
        case .tarGzip: "tar.gz"
        case .tarXz: "tar.xz"
        case .tarZstd: "tar.zst"
        }
    }
}
