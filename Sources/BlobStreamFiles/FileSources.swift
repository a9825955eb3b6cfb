import BlobStream
import Dispatch
import Foundation
import Glibc

/// Registers the `file:` scheme.
public enum FileSources {
    /// The scheme this module serves.
    public static let scheme = "file"

    /// How long opening a named FIFO waits for a writer by default: 10 seconds.
    public static let defaultWriterTimeout: Duration = .seconds(10)

    /// Registers `file:` in `registry`: `file:///absolute/path` (percent-encoded). A regular
    /// file is read with `FileDataSource`; a FIFO, character device or socket (`/dev/stdin`
    /// on a pipe, `<(command)`) with a sequential `FileHandleDataSource`.
    ///
    /// - Parameter writerTimeout: how long opening a named FIFO that has no writer waits for
    ///   one before failing (see `makeSource(path:writerTimeout:)`).
    public static func register(in registry: DataSourceRegistry, writerTimeout: Duration = defaultWriterTimeout) {
        registry.register(scheme: scheme) { url, _ in
            try makeSource(path: BlobURL.path(ofFileURL: url), writerTimeout: writerTimeout)
        }
    }

    /// The source for a path: `FileDataSource` for a regular file (and for a path that does
    /// not exist or cannot be examined, so that opening reports the error with the path),
    /// a `FileHandleDataSource` otherwise.
    ///
    /// Like cat, opening a named FIFO waits for its writer (a non-blocking open would read a
    /// FIFO nobody writes to as a clean, empty end), but for `writerTimeout` at most: then it
    /// fails with `.sourceFailed` naming the FIFO, instead of hanging forever.
    ///
    /// - Throws: `BlobStreamError` `.notFound` for a path holding a NUL byte, `.sourceFailed`
    ///   when a FIFO gets no writer in time, `.permissionDenied`/`.ioFailed` when a FIFO,
    ///   device or socket cannot be opened.
    public static func makeSource(path: String, writerTimeout: Duration = defaultWriterTimeout) throws
        -> any BlobDataSource
    {
        guard !path.utf8.contains(0) else { throw nulInPath(path) }
        var info = stat()
        guard stat(path, &info) == 0 else { return FileDataSource(path: path) }
        let kind = info.st_mode & S_IFMT
        switch kind {
        case S_IFIFO, S_IFCHR, S_IFSOCK:
            let fd =
                kind == S_IFIFO
                ? try openFIFO(path, writerTimeout: writerTimeout) : Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let code = errno
                throw BlobStreamError(
                    code == EACCES ? .permissionDenied : .ioFailed,
                    "cannot open '\(path)' for reading", cause: ErrnoError(code))
            }
            return FileHandleDataSource(
                fileHandle: FileHandle(fileDescriptor: fd, closeOnDealloc: false), closeOnClose: true)
        default:
            return FileDataSource(path: path)
        }
    }

    /// The error for a path that holds a NUL byte: a C call would cut the path there and open
    /// another file.
    static func nulInPath(_ path: String) -> BlobStreamError {
        BlobStreamError(.notFound, "cannot open '\(BlobURL.escapedText(path))': a path cannot contain a NUL byte")
    }

    /// Opens a FIFO for reading, waiting for a writer at most `writerTimeout`: the blocking
    /// `open` runs on a helper thread; when time is up, a non-blocking open for writing (which
    /// succeeds, since a reader is waiting) releases it, and the FIFO is reported as having
    /// no writer. Returns the descriptor, or −1 with `errno` set when `open` failed.
    private static func openFIFO(_ path: String, writerTimeout: Duration) throws -> Int32 {
        final class Outcome: @unchecked Sendable { // written by the thread before `done` signals
            var fd: Int32 = -1
            var code: Int32 = 0
        }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var fd: Int32
            repeat { fd = Glibc.open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
            outcome.fd = fd
            outcome.code = fd < 0 ? errno : 0
            done.signal()
        }
        thread.start()
        let (seconds, attoseconds) = writerTimeout.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        if done.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds))) == .success {
            errno = outcome.code
            return outcome.fd
        }
        // No writer in time: stand in for one so that the helper's open returns, then close
        // both. (Should that open fail, the helper stays blocked in its open; nothing waits.)
        let release = Glibc.open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if release >= 0 {
            done.wait()
            if outcome.fd >= 0 { Glibc.close(outcome.fd) }
            Glibc.close(release)
        }
        let shown = String(format: "%g", Double(nanoseconds) / 1e9)
        throw BlobStreamError(
            .sourceFailed, "cannot read the FIFO '\(BlobURL.escapedText(path))': no writer opened it within \(shown) s")
    }
}
