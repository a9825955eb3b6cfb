import Foundation

/// One entry of an archive, as its header describes it (see `ArchiveListing`).
public struct ArchiveEntry: Sendable, Equatable, CustomStringConvertible {
    /// What an entry is.
    public enum EntryType: Sendable, Equatable, CustomStringConvertible {
        /// A regular file: the only type `ArchiveMemberDataSource` streams directly.
        case file
        case directory
        case symbolicLink
        /// A hard link to an earlier entry (`linkTarget`); streamed as its target's bytes.
        case hardLink
        case characterDevice
        case blockDevice
        case fifo
        case socket
        case unknown

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
    /// locale; bytes that are not UTF-8 become U+FFFD. Only a name: nothing is written to
    /// disk, so `..` or a leading `/` mean nothing special.
    public var path: String
    /// The size the header gives, when it gives one (zip entries written to a pipe may not).
    public var size: Int64?
    /// What the entry is.
    public var type: EntryType
    /// The modification time, when the header has one.
    public var mtime: Date?
    /// The target of a hard or symbolic link.
    public var linkTarget: String?
    /// The entry's data (or metadata) is encrypted: it cannot be streamed.
    public var isEncrypted: Bool

    /// Makes an entry.
    public init(path: String, size: Int64?, type: EntryType, mtime: Date?, linkTarget: String? = nil, isEncrypted: Bool = false) {
        self.path = path
        self.size = size
        self.type = type
        self.mtime = mtime
        self.linkTarget = linkTarget
        self.isEncrypted = isEncrypted
    }

    /// `"file\t1234\tdir/name"`.
    public var description: String {
        "\(type)\t\(size.map(String.init) ?? "-")\t\(path)\(linkTarget.map { " -> \($0)" } ?? "")"
    }
}
