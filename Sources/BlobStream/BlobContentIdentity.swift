/// What identifies a source's content without reading all of it: for a file, its size, its
/// modification time and the CRC-32s of sampled bytes; for a remote object, its size and its
/// strong ETag (`entityTag`), which the server changes with the content. Gzip seek-point indexes and archive member indexes
/// record one and are used only on content that still matches it (a copy made with
/// `cp -a` or rsync keeps its index: no device or inode is part of it). The compression kit
/// (`BlobStreamCompression`) samples a file (`init(ofFileAtPath:)`) and says which ranges
/// are sampled (`sampleRanges(forSize:)`).
///
/// The static `file(device:inode:size:modified:changed:)` makes the values of
/// `.blobContentIdentityKey`, which sources over files and assets answer so that what one
/// source learned about a file serves the others.
public struct BlobContentIdentity: Sendable, Hashable {
    /// The size of the content in bytes.
    public var size: Int64
    /// Its last modification, as the file system records it.
    public var modified: Timestamp
    /// The CRC-32 of each sampled range, in order.
    public var sampleCRC32s: [UInt32]
    /// A remote object's strong ETag, quotes included (`"5d41402a…"`); nil for a file.
    public var entityTag: String?

    /// Makes an identity.
    public init(size: Int64, modified: Timestamp, sampleCRC32s: [UInt32], entityTag: String? = nil) {
        self.size = size
        self.modified = modified
        self.sampleCRC32s = sampleCRC32s
        self.entityTag = entityTag
    }

    /// The identity of a remote object: its size and strong ETag (no time, no samples: the
    /// server's validator changes with the content).
    public static func remote(size: Int64, entityTag: String) -> BlobContentIdentity {
        BlobContentIdentity(
            size: size, modified: Timestamp(seconds: 0, nanoseconds: 0), sampleCRC32s: [], entityTag: entityTag)
    }

    /// A point in time as seconds and nanoseconds since 1970-01-01 00:00 UTC, as a file
    /// system records it (a `timespec`).
    public struct Timestamp: Sendable, Hashable {
        /// Whole seconds since 1970 (negative before).
        public var seconds: Int64
        /// Nanoseconds within the second, 0 ..< 1,000,000,000.
        public var nanoseconds: Int64

        /// Makes a timestamp.
        public init(seconds: Int64, nanoseconds: Int64) {
            self.seconds = seconds
            self.nanoseconds = nanoseconds
        }
    }

    /// What a source that reads a regular file answers, from what `fstat` says of its open
    /// descriptor: the device, inode, size, and modification and change times. Every source
    /// over the same unchanged file answers the same value (a `FileDataSource`, an archive
    /// opened by path), so what one learned serves the others.
    ///
    /// - Parameters:
    ///   - device: the id of the device holding the file (`st_dev`).
    ///   - inode: the file's inode number (`st_ino`).
    ///   - size: its size in bytes (`st_size`).
    ///   - modified: its last modification (`st_mtim`).
    ///   - changed: its last status change (`st_ctim`), which users cannot set.
    public static func file(device: UInt64, inode: UInt64, size: Int64, modified: Timestamp, changed: Timestamp)
        -> String
    {
        "file:\(device):\(inode):\(size)"
            + ":\(modified.seconds).\(modified.nanoseconds):\(changed.seconds).\(changed.nanoseconds)"
    }
}
