import BlobStream
import Glibc // flock, openat, fdopendir, unlinkat, utimensat, futimens: what swift-system does not offer
import SystemPackage

/// The calls a cache folder of its own makes (the block cache's): folders made without
/// following links, entries listed with `lstat`, trees removed without ever leaving them
/// through a link, use times set to the nanosecond, and an advisory lock file that holds a
/// counter.
package enum CacheFolderCalls {
    /// What `lstat` says of one entry of a folder.
    package struct Entry: Sendable {
        package var name: String
        package var kind: FileKind
        package var size: Int64
        /// Seconds and nanoseconds since 1970 of the last modification (the use time).
        package var modified: BlobContentIdentity.Timestamp
        package var device: UInt64
        package var inode: UInt64
    }

    /// `lstat(path)`: what is at `path` itself (a link is a link).
    package static func linkStatus(_ path: String) -> Entry? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return entry(name: path, info)
    }

    private static func entry(name: String, _ info: stat) -> Entry {
        let kind: FileKind
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFIFO: kind = .fifo
        case S_IFLNK: kind = .symbolicLink
        case S_IFSOCK: kind = .socket
        case S_IFCHR: kind = .characterDevice
        case S_IFBLK: kind = .blockDevice
        default: kind = .unknown
        }
        return Entry(
            name: name, kind: kind, size: Int64(info.st_size),
            modified: BlobContentIdentity.Timestamp(
                seconds: Int64(info.st_mtim.tv_sec), nanoseconds: Int64(info.st_mtim.tv_nsec)),
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The entries of the folder `path` (not `.` nor `..`), each as `lstat` sees it; empty
    /// when `path` is not a folder (a link to one is not opened: `O_NOFOLLOW`).
    package static func entries(of path: String) -> [Entry] {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        guard let directory = fdopendir(descriptor) else {
            close(descriptor)
            return []
        }
        defer { closedir(directory) }
        var found: [Entry] = []
        while let item = readdir(directory) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            var info = stat()
            guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            found.append(entry(name: name, info))
        }
        return found
    }

    /// Makes the folder `path` and those above it that are missing (`mode` for the new
    /// ones). Fails when something other than a folder is at `path` (a link to a folder
    /// too: the cache's own folders are never links).
    ///
    /// - Returns: whether `path` itself was made now.
    package static func makeFolder(_ path: String, mode: mode_t = 0o700) -> Result<Bool, SystemCallFailure> {
        if mkdir(path, mode) == 0 { return .success(true) }
        var code = errno
        if code == ENOENT, let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            if case .failure(let failure) = makeFolderAbove(String(path[..<slash]), mode: mode) {
                return .failure(failure)
            }
            if mkdir(path, mode) == 0 { return .success(true) }
            code = errno
        }
        guard code == EEXIST else { return .failure(SystemCallFailure("mkdir", code: code)) }
        guard linkStatus(path)?.kind == .directory else { return .failure(SystemCallFailure("mkdir", .notDirectory)) }
        return .success(false)
    }

    /// A folder the user names (and those above it): made as `mkdir -p` makes them,
    /// following links as the user's own path may.
    package static func makeFolderAbove(_ path: String, mode: mode_t) -> Result<Void, SystemCallFailure> {
        if mkdir(path, mode) == 0 { return .success(()) }
        var code = errno
        if code == ENOENT, let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            if case .failure(let failure) = makeFolderAbove(String(path[..<slash]), mode: mode) {
                return .failure(failure)
            }
            if mkdir(path, mode) == 0 { return .success(()) }
            code = errno
        }
        return code == EEXIST ? .success(()) : .failure(SystemCallFailure("mkdir", code: code))
    }

    /// Removes what is at `path`: a file or a link (the link only), or a folder with all it
    /// holds, never entering a link (`openat(O_NOFOLLOW)`, `unlinkat`). The bytes of the
    /// regular files removed.
    @discardableResult
    package static func removeTree(_ path: String) -> Int64 {
        guard let status = linkStatus(path) else { return 0 }
        if status.kind != .directory {
            return Glibc.unlink(path) == 0 && status.kind == .regular ? status.size : 0
        }
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        let removed = removeContents(of: descriptor)
        rmdir(path)
        return removed
    }

    /// Removes everything in the open folder `descriptor`, then closes it.
    @discardableResult
    static func removeContents(of descriptor: Int32) -> Int64 {
        guard let directory = fdopendir(descriptor) else {
            close(descriptor)
            return 0
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let item = readdir(directory) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        var removed: Int64 = 0
        for name in names {
            var info = stat()
            guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                let inner = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if inner >= 0 { removed += removeContents(of: inner) }
                unlinkat(descriptor, name, AT_REMOVEDIR)
            } else if unlinkat(descriptor, name, 0) == 0, info.st_mode & S_IFMT == S_IFREG {
                removed += Int64(info.st_size)
            }
        }
        return removed
    }

    /// Opens the file `name` in the folder `root`/`folders[0]`/`folders[1]`/…, never
    /// following a link below `root` (each folder opened with `O_NOFOLLOW | O_DIRECTORY`
    /// from the one before, the file with `O_NOFOLLOW | O_NONBLOCK`: a FIFO does not hold
    /// the open up). `root` itself, the user's path, may be reached through links.
    package static func openBeneath(_ root: String, folders: [String], name: String) -> BeneathFile.Opening {
        var folder = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return .missing }
        for component in folders {
            let inner = openat(folder, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let code = errno
            close(folder)
            guard inner >= 0 else { return code == ENOENT ? .missing : .refusedFolder }
            folder = inner
        }
        let file = openat(folder, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)
        if file < 0 {
            let code = errno
            if code == ENOENT {
                close(folder)
                return .missing
            }
            return .refused(BeneathFile(folder: folder, file: -1, name: name))
        }
        return .opened(BeneathFile(folder: folder, file: file, name: name))
    }

    /// Sets the modification and access times of the open file to now, to the nanosecond
    /// (the file system's own clock ticks coarsely, and the use order must not tie).
    package static func touch(_ descriptor: Int32) {
        var times = (now(), now())
        withUnsafePointer(to: &times) { pointer in
            pointer.withMemoryRebound(to: timespec.self, capacity: 2) { _ = futimens(descriptor, $0) }
        }
    }

    /// Sets the times of the file at `path` (a link is not followed) to now.
    package static func touch(path: String) {
        var times = (now(), now())
        withUnsafePointer(to: &times) { pointer in
            pointer.withMemoryRebound(to: timespec.self, capacity: 2) {
                _ = utimensat(AT_FDCWD, path, $0, AT_SYMLINK_NOFOLLOW)
            }
        }
    }

    /// Sets the times of the file at `path` (not following a link) to `seconds` since 1970.
    package static func setTime(path: String, seconds: Int) {
        var times = (timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0))
        withUnsafePointer(to: &times) { pointer in
            pointer.withMemoryRebound(to: timespec.self, capacity: 2) {
                _ = utimensat(AT_FDCWD, path, $0, AT_SYMLINK_NOFOLLOW)
            }
        }
    }

    private static func now() -> timespec {
        var value = timespec()
        clock_gettime(CLOCK_REALTIME, &value)
        return value
    }

    /// Seconds since 1970.
    package static var currentTime: Int { time(nil) }
}

/// An advisory lock file (`flock`) that holds a 64-bit counter: opened without following a
/// link and without waiting (a FIFO there is refused), made when missing (mode 0600).
/// Closing it releases the lock.
package final class CounterLockFile {
    private let descriptor: Int32

    /// Opens (or makes) the lock file at `path`; fails when something other than a regular
    /// file is there.
    package init(path: String) throws(SystemCallFailure) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0o600)
        guard descriptor >= 0 else { throw SystemCallFailure("open", code: errno) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw SystemCallFailure("fstat", .notPermitted)
        }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Takes the lock (`LOCK_EX`), waiting for another holder; with `wait: false`, false
    /// when another holds it.
    package func lock(wait: Bool = true) -> Bool {
        while flock(descriptor, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }

    /// Takes the lock, trying again every millisecond or so for at most `timeout` seconds;
    /// false when another holder kept it all that time (a process stopped while holding it
    /// cannot hold this caller for ever).
    package func lock(timeout: Double) -> Bool {
        let deadline = monotonicSeconds() + timeout
        var pause: UInt32 = 500
        while true {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
            guard errno == EWOULDBLOCK || errno == EINTR, monotonicSeconds() < deadline else { return false }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
    }

    private func monotonicSeconds() -> Double {
        var value = timespec()
        clock_gettime(CLOCK_MONOTONIC, &value)
        return Double(value.tv_sec) + Double(value.tv_nsec) / 1e9
    }

    /// Releases the lock.
    package func unlock() { _ = flock(descriptor, LOCK_UN) }

    /// The counter kept after `magic` (8 bytes); nil when the file holds no valid one.
    package func counter(magic: UInt64) -> Int64? {
        var words: (UInt64, UInt64) = (0, 0)
        let n = withUnsafeMutableBytes(of: &words) { pread(descriptor, $0.baseAddress!, 16, 0) }
        guard n == 16, UInt64(littleEndian: words.0) == magic else { return nil }
        return Int64(bitPattern: UInt64(littleEndian: words.1))
    }

    /// Keeps `value` after `magic`.
    package func setCounter(_ value: Int64, magic: UInt64) {
        var words = (magic.littleEndian, UInt64(bitPattern: value).littleEndian)
        _ = withUnsafeBytes(of: &words) { pwrite(descriptor, $0.baseAddress!, 16, 0) }
    }
}

/// A file opened by `CacheFolderCalls.openBeneath`, with the folder it is in (both closed
/// when this goes): it can be removed from that very folder, whatever links appeared on the
/// path since.
package final class BeneathFile {
    /// What `openBeneath` found.
    package enum Opening {
        /// Nothing at the name (or a folder on the way is missing).
        case missing
        /// A folder on the way is not a folder (a link, a file): nothing opened.
        case refusedFolder
        /// The name could not be opened (a link there, no permission): `file` is not open,
        /// the folder is, so that the name can be removed.
        case refused(BeneathFile)
        /// The file is open.
        case opened(BeneathFile)
    }

    let folder: Int32
    /// The file's descriptor (-1 when refused).
    package let file: Int32
    let name: String

    /// `fstat` of the open file.
    package func status() -> Result<FileStatus, SystemCallFailure> { SystemFile(rawDescriptor: file).status() }

    /// `pread`s until `count` bytes are in or the file ends.
    package func readFully(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Result<
        Int, SystemCallFailure
    > {
        SystemFile(rawDescriptor: file).readFully(into: buffer, count: count, at: offset)
    }

    /// Removes the name from its folder: a link is removed (not its target), a folder with
    /// what it holds (never through a link); when the file is open, only while the name
    /// still names it (so that a file another process has just put there stays).
    package func remove() {
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        if file >= 0 {
            var open = stat()
            guard fstat(file, &open) == 0, open.st_dev == info.st_dev, open.st_ino == info.st_ino else { return }
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            let inner = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if inner >= 0 { CacheFolderCalls.removeContents(of: inner) }
            unlinkat(folder, name, AT_REMOVEDIR)
        } else {
            unlinkat(folder, name, 0)
        }
    }

    init(folder: Int32, file: Int32, name: String) {
        self.folder = folder
        self.file = file
        self.name = name
    }

    deinit {
        if file >= 0 { Glibc.close(file) }
        Glibc.close(folder)
    }
}
