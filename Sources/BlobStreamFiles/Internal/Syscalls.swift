import BlobStream
import Glibc

/// What `fstat` says a descriptor is.
enum FileKind: Sendable, Equatable, CustomStringConvertible {
    case regular, directory, fifo, socket, characterDevice, blockDevice, symbolicLink, unknown

    init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        case S_IFLNK: self = .symbolicLink
        default: self = .unknown
        }
    }

    var description: String {
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

/// The few fields of `struct stat` the sources use.
struct FileStatus: Sendable {
    var kind: FileKind
    var size: Int64
    /// What `.blobContentIdentityKey` answers (`BlobContentIdentity.file`).
    var identity: String
}

/// Every C call of the module, in one place. Calls that can be interrupted are retried on
/// `EINTR`; failures come back as `ErrnoError` values (no allocation on the read paths).
enum Syscalls {
    /// `open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)`. Non-blocking so that opening
    /// a FIFO without a writer does not hang before `fstat` can refuse it; the caller clears
    /// the flag with `clearNonBlocking` once the descriptor is known to be wanted.
    static func openForReading(_ path: String) -> Result<Int32, ErrnoError> {
        while true {
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
            if fd >= 0 { return .success(fd) }
            let e = errno
            if e != EINTR { return .failure(ErrnoError(e)) }
        }
    }

    /// Clears `O_NONBLOCK` on a descriptor.
    static func clearNonBlocking(_ fd: Int32) -> Result<Void, ErrnoError> {
        let flags = fcntl(fd, F_GETFL)
        if flags < 0 { return .failure(ErrnoError(errno)) }
        if flags & O_NONBLOCK == 0 { return .success(()) }
        if fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 { return .failure(ErrnoError(errno)) }
        return .success(())
    }

    /// `fstat`.
    static func status(_ fd: Int32) -> Result<FileStatus, ErrnoError> {
        var st = stat()
        if fstat(fd, &st) != 0 { return .failure(ErrnoError(errno)) }
        return .success(
            FileStatus(
                kind: FileKind(mode: st.st_mode), size: Int64(st.st_size), identity: BlobContentIdentity.file(st)))
    }

    /// `pread` at `offset`, retried on `EINTR`. Returns the count (0 at the end of the file).
    @inline(__always)
    static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) -> Result<
        Int, ErrnoError
    > {
        while true {
            let n = Glibc.pread(fd, buffer, count, off_t(offset))
            if n >= 0 { return .success(n) }
            let e = errno
            if e != EINTR { return .failure(ErrnoError(e)) }
        }
    }

    /// `read`, retried on `EINTR`; on a non-blocking descriptor it waits with `poll` until
    /// the descriptor is readable (blocking I/O, as contract rule 2 allows). Returns the
    /// count (0 at the end).
    @inline(__always)
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Result<Int, ErrnoError> {
        while true {
            let n = Glibc.read(fd, buffer, count)
            if n >= 0 { return .success(n) }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK {
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let r = poll(&pfd, 1, -1)
                if r < 0, errno != EINTR { return .failure(ErrnoError(errno)) }
                continue
            }
            return .failure(ErrnoError(e))
        }
    }

    /// `read` that can be interrupted: waits with `poll` until `fd` is readable or `wake`
    /// (the read end of a wake-up pipe) is signalled, and fails with `ECANCELED` in the second case. Retried on
    /// `EINTR`; a non-blocking descriptor is waited on the same way.
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, wake: Int32) -> Result<
        Int, ErrnoError
    > {
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let r = poll(&fds, 2, -1)
            if r < 0 {
                if errno == EINTR { continue }
                return .failure(ErrnoError(errno))
            }
            if fds[1].revents != 0 { return .failure(ErrnoError(ECANCELED)) }
            let n = Glibc.read(fd, buffer, count)
            if n >= 0 { return .success(n) }
            let e = errno
            if e == EINTR || e == EAGAIN || e == EWOULDBLOCK { continue }
            return .failure(ErrnoError(e))
        }
    }

    /// A wake-up pipe (both ends close-on-exec, the write end non-blocking): `(read end,
    /// write end)`, or nil when the system refuses one.
    static func makeWakeup() -> (read: Int32, write: Int32)? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        return (ends[0], ends[1])
    }

    /// Signals a wake-up pipe through its write end: every `poll` on its read end, now and
    /// later, sees it readable (nothing ever reads the byte).
    static func signal(wakeup writeEnd: Int32) {
        var one: UInt8 = 1
        _ = Glibc.write(writeEnd, &one, 1)
    }

    /// `close`; the descriptor is gone afterwards whatever it returns (Linux), so `EINTR`
    /// is not retried.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Whether a descriptor is open (`fcntl(F_GETFD)`).
    static func isOpen(_ fd: Int32) -> Bool {
        fd >= 0 && fcntl(fd, F_GETFD) >= 0
    }

    /// What `/proc/self/fd/N` points at (a path, or `pipe:[1234]`), for messages.
    static func describe(descriptor fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
