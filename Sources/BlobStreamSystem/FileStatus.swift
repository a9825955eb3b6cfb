import BlobStream
import SystemPackage

/// What `stat` says a file is.
package enum FileKind: Sendable, Equatable, CustomStringConvertible {
    case regular, directory, fifo, socket, characterDevice, blockDevice, symbolicLink, unknown

    /// The kind of a `stat` file type.
    package init(_ type: FileType) {
        switch type {
        case .regular: self = .regular
        case .directory: self = .directory
        case .fifo: self = .fifo
        case .socket: self = .socket
        case .characterSpecial: self = .characterDevice
        case .blockSpecial: self = .blockDevice
        case .symbolicLink: self = .symbolicLink
        default: self = .unknown
        }
    }

    /// `"a regular file"`, `"a directory"`, `"a FIFO"`, …, for messages.
    package var description: String {
        switch self {
        case .regular: "a regular file"
        case .directory: "a directory"
        case .fifo: "a FIFO"
        case .socket: "a socket"
        case .characterDevice: "a character device"
        case .blockDevice: "a block device"
        case .symbolicLink: "a symbolic link"
        case .unknown: "a file of unknown kind"
        }
    }
}

/// The fields of `stat` the sources use, in Swift values. Equal values mean the same
/// version of the same file as far as metadata can tell: a file replaced (new inode),
/// rewritten (size, mtime) or touched (mtime, ctime) compares unequal. Holds no reference:
/// getting and comparing one allocates nothing.
package struct FileStatus: Sendable, Equatable {
    package var kind: FileKind
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var modified: BlobContentIdentity.Timestamp
    package var changed: BlobContentIdentity.Timestamp

    package init(_ stat: Stat) {
        kind = FileKind(stat.type)
        device = UInt64(stat.deviceID.rawValue)
        inode = UInt64(stat.inode.rawValue)
        size = stat.size
        modified = BlobContentIdentity.Timestamp(
            seconds: Int64(stat.st_mtim.tv_sec), nanoseconds: Int64(stat.st_mtim.tv_nsec))
        changed = BlobContentIdentity.Timestamp(
            seconds: Int64(stat.st_ctim.tv_sec), nanoseconds: Int64(stat.st_ctim.tv_nsec))
    }

    /// `stat(path)`, following symbolic links. The path is passed as it is (not normalized).
    package init(path: String) throws(SystemCallFailure) {
        let result = path.withCString { p in Result { () throws(Errno) in try Stat(p) } }
        switch result {
        case .success(let stat): self.init(stat)
        case .failure(let errno): throw SystemCallFailure("stat", errno)
        }
    }

    /// `stat(path)`, following symbolic links, as a `Result`.
    package static func at(_ path: String) -> Result<FileStatus, SystemCallFailure> {
        Result { () throws(SystemCallFailure) in try FileStatus(path: path) }
    }

    package var isRegular: Bool { kind == .regular }
    package var isDirectory: Bool { kind == .directory }

    /// Seconds since 1970 of the last modification.
    package var modificationTime: Double { Double(modified.seconds) + Double(modified.nanoseconds) / 1e9 }

    /// What `.blobContentIdentityKey` answers for this file (`BlobContentIdentity.file`).
    package var identity: String {
        BlobContentIdentity.file(device: device, inode: inode, size: size, modified: modified, changed: changed)
    }
}
