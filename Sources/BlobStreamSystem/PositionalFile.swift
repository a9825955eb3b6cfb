import BlobStream
import Glibc // fcntl(F_DUPFD_CLOEXEC): swift-system's duplicate() does not set close-on-exec
import SystemPackage

/// A file opened by path for positional reads (`pread`), closed when this goes: what the
/// index and decoding code reads by offset (an .xz file's blocks, an index file's windows, a
/// file's sampled bytes). Errors are `BlobStreamError`s that name the file as `label` says
/// (`archive '/x.tar.xz'`, `gzip index '/x.gz.gzidx'`), the call and the offset, with the
/// code `SystemCallFailure` maps `errno` to.
///
/// `pread` is safe from any thread, and the descriptor never changes: the parallel reader
/// loads windows from several threads at once.
package final class PositionalFile: Sendable {
    /// How errors name the file: `archive '/x.tar.xz'`.
    package let label: String
    private let file: SystemFile

    /// Opens `path` for reading; `label` names it in errors (by default `'PATH'`).
    package init(path: String, label: String? = nil) throws(BlobStreamError) {
        let label = label ?? "'\(path)'"
        switch SystemFile.openForReading(path) {
        case .success(let file):
            self.file = file
            self.label = label
        case .failure(let failure): throw failure.error(label)
        }
    }

    /// Opens `path` only when it is a regular file, never waiting for it: `O_NONBLOCK` (a
    /// FIFO without a writer would hold a plain open for ever) and `O_NOFOLLOW` (a symbolic
    /// link is not followed), then `fstat`. nil for anything else there, or nothing. (For a
    /// regular file `O_NONBLOCK` changes nothing, so it is left set.)
    package static func openRegularFile(_ path: String, label: String? = nil) -> PositionalFile? {
        guard case .success(let file) = SystemFile.openForReading(path, nonBlocking: true, followsLinks: false) else {
            return nil
        }
        guard case .success(let status) = file.status(), status.kind == .regular else {
            file.close()
            return nil
        }
        return PositionalFile(file: file, label: label ?? "'\(path)'")
    }

    private init(file: SystemFile, label: String) {
        self.file = file
        self.label = label
    }

    /// Keeps a duplicate of `descriptor` (the caller keeps and closes its own).
    package init(duplicating descriptor: Int32, label: String) throws(BlobStreamError) {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw SystemCallFailure("fcntl", code: errno).error(label) }
        file = SystemFile(rawDescriptor: copy)
        self.label = label
    }

    deinit { file.close() }

    /// The descriptor's number (valid while this lives), for a reader that duplicates it.
    package var descriptor: Int32 { file.rawValue }

    /// `fstat` of the open file.
    package func status() throws(BlobStreamError) -> FileStatus {
        switch file.status() {
        case .success(let status): return status
        case .failure(let failure): throw failure.error(label)
        }
    }

    /// The size of the file now.
    package func size() throws(BlobStreamError) -> Int64 { try status().size }

    /// Up to `count` bytes at `offset` into `buffer` (fewer only at the end of the file).
    package func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws(BlobStreamError)
        -> Int
    {
        switch file.readFully(into: buffer, count: count, at: offset) {
        case .success(let n): return n
        case .failure(let failure): throw failure.error(label, offset: offset)
        }
    }

    /// Exactly `count` bytes at `offset`.
    ///
    /// - Throws: `.corrupt` when the file ends before (it was cut, or is damaged), naming the
    ///   file, `what` it holds and the offset; the system's error otherwise.
    package func bytes(count: Int, at offset: Int64, what: String) throws(BlobStreamError) -> [UInt8] {
        // Not through `unsafeUninitializedCapacity` for nothing: that writes the count into the
        // empty-array singleton every thread shares (ThreadSanitizer reports it).
        guard count > 0 else { return [] }
        var failure: SystemCallFailure?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, done in
            switch file.readFully(into: buffer.baseAddress!, count: count, at: offset) {
            case .success(let n): done = n
            case .failure(let f):
                failure = f
                done = 0
            }
        }
        if let failure { throw failure.error(label, offset: offset) }
        guard bytes.count == count else {
            throw BlobStreamError(
                .corrupt,
                "\(label): corrupt \(what): truncated (it ends at byte \(offset + Int64(bytes.count)); "
                    + "\(count) bytes expected at byte \(offset))")
        }
        return bytes
    }
}
