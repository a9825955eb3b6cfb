import BlobStream
import Foundation

/// One entry of an archive, as its header describes it (see `ArchiveListing`).
public struct ArchiveEntry: Sendable, Equatable, CustomStringConvertible {
    /// What an entry is.
    public enum EntryType: Sendable, Equatable, CustomStringConvertible {
        /// A regular file: the only type `ArchiveMemberDataSource` streams directly.
        case file
        /// A directory.
        case directory
        /// A symbolic link (`linkTarget` names where it points).
        case symbolicLink
        /// A hard link to an earlier entry (`linkTarget`); streamed as its target's bytes.
        case hardLink
        /// A character device node.
        case characterDevice
        /// A block device node.
        case blockDevice
        /// A named pipe (FIFO).
        case fifo
        /// A socket.
        case socket
        /// A type the archive names that none of the others is.
        case unknown

        /// The kind's name, as `ls --json` prints it.
        public var description: String {
            switch self {
            case .file: "file"
            case .directory: "directory"
            case .symbolicLink: "symlink"
            case .hardLink: "hardlink"
            case .characterDevice: "character device"
            case .blockDevice: "block device"
            case .fifo: "fifo"
            case .socket: "socket"
            case .unknown: "unknown"
            }
        }
    }

    /// The name as stored (a leading `./` kept), decoded as UTF-8 whatever the process
    /// locale; bytes that are not UTF-8 become U+FFFD (`pathBytes` has them, `escapedPath`
    /// spells them). Only a name: nothing is written to disk, so `..` or a leading `/` mean
    /// nothing special.
    public var path: String
    /// The name's raw bytes as stored (UTF-8 for formats that store UTF-8, such as pax and
    /// zip with its UTF-8 flag; the header's bytes for ustar, GNU tar, cpio and ar).
    public var pathBytes: [UInt8]
    /// The size the header gives, when it gives one (zip entries written to a pipe may not).
    /// A tar directory's is its header's size field when listed with `readingTarHeaders`
    /// (GNU tar shows it; no data follows), 0 otherwise.
    public var size: Int64?
    /// What the entry is.
    public var type: EntryType
    /// The modification time, when the header has one.
    public var mtime: Date?
    /// The target of a hard or symbolic link.
    public var linkTarget: String?
    /// The entry's data (or metadata) is encrypted: it cannot be streamed.
    public var isEncrypted: Bool
    /// The permission bits (`mode & 0o7777`: rwx for owner, group, others, and setuid,
    /// setgid, sticky), when the listing has them (libarchive's listings and indexes do).
    public var permissions: UInt32?
    /// The owner's and group's numeric ids and names, as the header stores them (nil
    /// when not known: a name is nil when the header has none).
    public var ownership: Ownership?
    /// A device node's major and minor numbers (character and block devices), when the
    /// header stores them.
    public var device: DeviceNumber?
    /// The type flag of the entry's tar header (`UInt8(ascii: "7")` for a contiguous file,
    /// which is otherwise a `.file`), when the listing read the tar headers themselves
    /// (`ArchiveListing.entries(of:name:readingTarHeaders:)` on an uncompressed tar that can
    /// seek); nil otherwise.
    public var tarTypeFlag: UInt8?

    /// A device node's numbers.
    public struct DeviceNumber: Sendable, Equatable {
        /// The major number (the driver).
        public var major: UInt64
        /// The minor number (the device the driver serves).
        public var minor: UInt64

        /// Makes one.
        public init(major: UInt64, minor: UInt64) {
            self.major = major
            self.minor = minor
        }
    }

    /// The owner and group of an entry as its header stores them.
    public struct Ownership: Sendable, Equatable {
        /// The owner's numeric id.
        public var uid: Int64
        /// The group's numeric id.
        public var gid: Int64
        /// The owner's name (tar's `uname`), nil when the header has none.
        public var owner: String?
        /// The group's name (tar's `gname`), nil when the header has none.
        public var group: String?

        /// Makes one.
        public init(uid: Int64, gid: Int64, owner: String? = nil, group: String? = nil) {
            self.uid = uid
            self.gid = gid
            self.owner = owner
            self.group = group
        }
    }

    /// Makes an entry; `pathBytes` defaults to `path`'s UTF-8.
    public init(
        path: String, size: Int64?, type: EntryType, mtime: Date?, linkTarget: String? = nil, isEncrypted: Bool = false,
        pathBytes: [UInt8]? = nil, permissions: UInt32? = nil, ownership: Ownership? = nil,
        device: DeviceNumber? = nil, tarTypeFlag: UInt8? = nil
    ) {
        self.path = path
        self.pathBytes = pathBytes ?? Array(path.utf8)
        self.size = size
        self.type = type
        self.mtime = mtime
        self.linkTarget = linkTarget
        self.isEncrypted = isEncrypted
        self.permissions = permissions
        self.ownership = ownership
        self.device = device
        self.tarTypeFlag = tarTypeFlag
    }

    /// The name in the spelling an `archive:` URL's member (and `blobstream ls`) uses:
    /// `pathBytes` with control bytes, bytes that are not UTF-8, `%`, and `!` before `/`
    /// percent-encoded (`BlobURL.escapedName`). One line whatever the name holds, and
    /// `archive:<url>!/<escapedPath>` names this entry.
    public var escapedPath: String { BlobURL.escapedName(pathBytes) }

    /// `"file\t1234\tdir/name"`.
    public var description: String {
        "\(type)\t\(size.map(String.init) ?? "-")\t\(escapedPath)\(linkTarget.map { " -> \($0)" } ?? "")"
    }
}
