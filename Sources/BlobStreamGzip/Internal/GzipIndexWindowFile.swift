import BlobStream
import Foundation

/// An open index file whose windows are read when a decode needs them, so that loading an
/// index reads its point table and record only (a 1 GiB file's index holds 8 MiB of windows;
/// one read at one offset needs one of them).
///
/// It keeps its own descriptor for as long as a seek point refers to it: an index file
/// replaced after loading (renamed over) leaves the loaded index reading the file it was
/// loaded from. `pread` is safe from any thread; the parallel reader loads windows from
/// several at once.
final class GzipIndexWindowFile: Sendable {
    private let descriptor: Int32
    /// How errors name the index (its path, or the file it is embedded in).
    let name: String

    /// Opens `path` for reading.
    init(path: String) throws(BlobStreamError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            let kind: BlobStreamError.Code =
                code == ENOENT ? .notFound : code == EACCES ? .permissionDenied : .ioFailed
            throw BlobStreamError(kind, "\(path): cannot read the gzip index: \(String(cString: strerror(code)))")
        }
        descriptor = fd
        name = path
    }

    /// Keeps a duplicate of `descriptor` (the caller keeps and closes its own).
    init(duplicating descriptor: Int32, name: String) throws(BlobStreamError) {
        let fd = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard fd >= 0 else {
            throw BlobStreamError(
                .ioFailed, "\(name): cannot read the gzip index: \(String(cString: strerror(errno)))")
        }
        self.descriptor = fd
        self.name = name
    }

    deinit { close(descriptor) }

    /// The size of the file now.
    func size() throws(BlobStreamError) -> Int64 {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw BlobStreamError(.ioFailed, "\(name): cannot read the gzip index (fstat: errno \(errno))")
        }
        return Int64(status.st_size)
    }

    /// Exactly `count` bytes at `offset`.
    ///
    /// - Throws: `.corrupt` when the file ends before (it was cut after the index was
    ///   loaded, or is damaged), naming the file and the offset; `.ioFailed` with the
    ///   system's error.
    func read(count: Int, at offset: Int64) throws(BlobStreamError) -> [UInt8] {
        // Not through `unsafeUninitializedCapacity` for nothing: that writes the count into the
        // empty-array singleton every thread shares (ThreadSanitizer reports it).
        guard count > 0 else { return [] }
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, done in
            done = 0
            while done < count {
                let n = pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    failure = n < 0 ? errno : -1
                    break
                }
                done += n
            }
        }
        if failure > 0 {
            throw BlobStreamError(
                .ioFailed,
                "\(name): cannot read \(count) bytes of the gzip index at byte \(offset): \(String(cString: strerror(failure)))"
            )
        }
        guard failure == 0 else {
            throw BlobStreamError(
                .corrupt,
                "\(name): corrupt gzip index: truncated (it ends at byte \(offset + Int64(bytes.count)); "
                    + "\(count) bytes expected at byte \(offset))")
        }
        return bytes
    }
}
