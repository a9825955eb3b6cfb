import BlobStream
import Foundation
import Glibc

/// Registers the `file:` scheme.
public enum FileSources {
    /// The scheme this module serves.
    public static let scheme = "file"

    /// Registers `file:` in `registry`: `file:///absolute/path` (percent-encoded). A regular
    /// file is read with `FileDataSource`; a FIFO, character device or socket (`/dev/stdin`
    /// on a pipe, `<(command)`) with a sequential `FileHandleDataSource`.
    public static func register(in registry: DataSourceRegistry) {
        registry.register(scheme: scheme) { url, _ in try makeSource(path: BlobURL.path(ofFileURL: url)) }
    }

    /// The source for a path: `FileDataSource` for a regular file (and for a path that does
    /// not exist or cannot be examined, so that opening reports the error with the path),
    /// a `FileHandleDataSource` otherwise.
    public static func makeSource(path: String) throws -> any BlobDataSource {
        var info = stat()
        guard stat(path, &info) == 0 else { return FileDataSource(path: path) }
        switch info.st_mode & S_IFMT {
        case S_IFIFO, S_IFCHR, S_IFSOCK:
            // Like cat, opening a named FIFO waits for its writer (a non-blocking open would
            // read an empty FIFO as a clean, empty end).
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let code = errno
                throw BlobStreamError(
                    code == EACCES ? .permissionDenied : .ioFailed,
                    "cannot open '\(path)' for reading", cause: ErrnoError(code))
            }
            return FileHandleDataSource(fileHandle: FileHandle(fileDescriptor: fd, closeOnDealloc: false), closeOnClose: true)
        default:
            return FileDataSource(path: path)
        }
    }
}
