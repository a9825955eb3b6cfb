import BlobStream
import BlobStreamSystem
import Foundation

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
    /// - Parameters:
    ///   - registry: the registry that gets the `file:` scheme.
    ///   - writerTimeout: how long opening a named FIFO that has no writer waits for
    ///     one before failing (see `makeSource(path:writerTimeout:)`).
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
        guard let status = try? FileStatus(path: path) else { return FileDataSource(path: path) }
        let opened: Result<SystemFile?, SystemCallFailure>
        switch status.kind {
        case .fifo:
            opened = SystemFile.openFIFO(path, writerTimeout: writerTimeout)
        case .characterDevice, .socket:
            opened = SystemFile.openForReading(path).map { $0 }
        default:
            return FileDataSource(path: path)
        }
        switch opened {
        case .success(let file?):
            return FileHandleDataSource(
                fileHandle: FileHandle(fileDescriptor: file.rawValue, closeOnDealloc: false), closeOnClose: true)
        case .success(nil):
            let (seconds, attoseconds) = writerTimeout.components
            let shown = String(format: "%g", Double(max(0, seconds)) + Double(attoseconds) / 1e18)
            throw BlobStreamError(
                .sourceFailed,
                "cannot read the FIFO '\(BlobURL.escapedText(path))': no writer opened it within \(shown) s")
        case .failure(let failure):
            throw failure.error(
                "'\(path)'", code: failure.errorCode == .permissionDenied ? .permissionDenied : .ioFailed)
        }
    }

    /// The error for a path that holds a NUL byte: a C call would cut the path there and open
    /// another file.
    static func nulInPath(_ path: String) -> BlobStreamError {
        BlobStreamError(.notFound, "cannot open '\(BlobURL.escapedText(path))': a path cannot contain a NUL byte")
    }
}
