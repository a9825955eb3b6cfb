import BlobStream
import Glibc

/// What identifies one version of a file cheaply: a file replaced (new inode), rewritten
/// (size, mtime) or touched (mtime, ctime) compares unequal.
struct FileIdentity: Sendable, Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: timespec
    var changed: timespec
    var isRegular: Bool
    var isDirectory: Bool

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modified = st.st_mtim
        changed = st.st_ctim
        isRegular = st.st_mode & S_IFMT == S_IFREG
        isDirectory = st.st_mode & S_IFMT == S_IFDIR
    }

    static func == (a: FileIdentity, b: FileIdentity) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
            && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
    }

    /// Seconds since 1970 of the last modification.
    var modificationTime: Double { Double(modified.tv_sec) + Double(modified.tv_nsec) / 1e9 }
}

/// Every C call of the module, in one place. Interruptible calls are retried on `EINTR`;
/// failures come back as `ErrnoError` values.
enum Syscalls {
    /// `stat(path)` (follows symbolic links).
    static func identity(path: String) -> Result<FileIdentity, ErrnoError> {
        var st = stat()
        if stat(path, &st) != 0 { return .failure(ErrnoError(errno)) }
        return .success(FileIdentity(st))
    }

    /// `fstat(fd)`.
    static func identity(fd: Int32) -> Result<FileIdentity, ErrnoError> {
        var st = stat()
        if fstat(fd, &st) != 0 { return .failure(ErrnoError(errno)) }
        return .success(FileIdentity(st))
    }

    /// `open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)`.
    static func openForReading(_ path: String) -> Result<Int32, ErrnoError> {
        while true {
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
            if fd >= 0 { return .success(fd) }
            let e = errno
            if e != EINTR { return .failure(ErrnoError(e)) }
        }
    }

    /// `pread`s until `count` bytes are in or the file ends; returns how many were read.
    static func preadFully(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) -> Result<
        Int, ErrnoError
    > {
        var done = 0
        while done < count {
            let n = Glibc.pread(fd, buffer + done, count - done, off_t(offset + Int64(done)))
            if n > 0 {
                done += n
            } else if n == 0 {
                break
            } else {
                let e = errno
                if e != EINTR { return .failure(ErrnoError(e)) }
            }
        }
        return .success(done)
    }

    /// `close`; not retried (the descriptor is gone whatever it returns on Linux).
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Writes all of `bytes` to a new file at `path` (mode 0644), replacing what was there.
    static func writeFile(_ path: String, _ bytes: [UInt8]) -> Result<Void, ErrnoError> {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 { return .failure(ErrnoError(errno)) }
        defer { _ = Glibc.close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                return .failure(ErrnoError(e))
            }
            done += n
        }
        return .success(())
    }

    // MARK: - inotify

    /// The events that mean "the library changed".
    static let watchMask: UInt32 =
        UInt32(
            IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB
                | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF) | UInt32(IN_ONLYDIR)

    /// `inotify_init1(IN_NONBLOCK | IN_CLOEXEC)`.
    static func inotifyInit() -> Result<Int32, ErrnoError> {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        return fd >= 0 ? .success(fd) : .failure(ErrnoError(errno))
    }

    /// `inotify_add_watch(fd, path, watchMask)`: the watch descriptor.
    static func inotifyWatch(_ fd: Int32, _ path: String) -> Result<Int32, ErrnoError> {
        let wd = inotify_add_watch(fd, path, watchMask)
        return wd >= 0 ? .success(wd) : .failure(ErrnoError(errno))
    }

    /// One inotify event, as much of it as the watcher uses.
    struct InotifyEvent {
        var watch: Int32
        var mask: UInt32
        var name: String
    }

    /// Reads the pending events of a non-blocking inotify descriptor (empty when none).
    static func inotifyRead(_ fd: Int32) -> [InotifyEvent] {
        var events: [InotifyEvent] = []
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = Glibc.read(fd, buffer, capacity)
            if n < 0 {
                if errno == EINTR { continue }
                break // EAGAIN: drained
            }
            if n == 0 { break }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= n {
                let wd = buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                var name = ""
                if length > 0 {
                    let bytes = UnsafeRawBufferPointer(start: buffer + offset + header, count: length)
                    let end = bytes.firstIndex(of: 0) ?? length
                    name = String(decoding: bytes[0..<end], as: UTF8.self)
                }
                events.append(InotifyEvent(watch: wd, mask: mask, name: name))
                offset += header + length
            }
        }
        return events
    }
}
