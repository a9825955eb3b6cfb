// Every file the library and the tool write (indexes, `--output`): where it may go, and how
// it is written.

import BlobStream
import Foundation
import Glibc

/// A file BlobStream writes: an index beside its file or where the caller says, the tool's
/// `--output`.
///
/// It goes only to a new path or over an existing regular file that is none of the
/// inputs, compared by device and inode (`stat`), so through any link: a hard
/// link, a symbolic link, `/proc/self/fd/N`. Anything else there (a directory, a FIFO, a
/// device, a socket, a symbolic link to nothing, an input) is refused with
/// `.invalidDestination`, naming the path and why, before anything is written. The bytes go to an unnamed file in
/// the destination's folder (`AtomicFileWrite`), which is then renamed over the destination
/// (a symbolic link to a regular file: over its target, so the link stays): an interrupted
/// run leaves the destination as it was, never a partial file, and no temporary file.
package struct OutputFile {
    /// The path as given (the user's `--output`, or the default beside the input).
    package let path: String
    /// What the file holds, for messages: "the index".
    package let role: String
    private let inputs: [ProtectedInput]

    /// A file's device and inode, and how the command named it.
    private struct ProtectedInput {
        var name: String
        var device: UInt64
        var inode: UInt64
    }

    /// Checks that `path` may receive `role`.
    ///
    /// - Parameters:
    ///   - path: where the file goes.
    ///   - role: what it holds, for messages ("the index").
    ///   - inputs: the paths the command reads; one that cannot be examined is left out
    ///     (the command's read reports it).
    /// - Throws: `.invalidDestination` naming `path` when it is not a new path or a regular
    ///   file, or when it is one of `inputs`.
    package init(_ path: String, role: String, inputs: [String]) throws(BlobStreamError) {
        self.path = path
        self.role = role
        self.inputs = inputs.compactMap { name in
            var info = stat()
            guard stat(name, &info) == 0 else { return nil }
            return ProtectedInput(name: name, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        }
        _ = try destination()
    }

    /// Writes `bytes` to the file: into an unnamed file beside it, flushed to the disk, then
    /// renamed over it (`AtomicFileWrite`). The destination is checked again just before the
    /// rename.
    ///
    /// - Throws: `.invalidDestination` when the destination became something that may not be
    ///   written over; `.ioFailed` naming the path when a step fails (nothing is left).
    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        try write { try $0(bytes) }
    }

    /// Writes what `contents` hands its `write` function, in turn (see `write(_:)`): the
    /// destination is replaced only when `contents` returned; an error it throws (a source
    /// that failed) leaves the destination as it was, and is rethrown.
    package func write(contents: (_ write: (UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        let target = try destination()
        var existing = stat()
        let mode = stat(target, &existing) == 0 ? existing.st_mode & 0o7777 : nil
        var changed = false
        var refused: BlobStreamError?
        let written = try AtomicFileWrite.write(
            to: target, mode: mode,
            beforeRename: {
                do throws(BlobStreamError) {
                    changed = try destination() != target
                } catch {
                    refused = error
                }
                return refused == nil && !changed
            }, contents: contents)
        if let refused { throw refused }
        if changed { throw failure("'\(path)' changed while it was written", 0) }
        if case .failure(let failure) = written {
            throw self.failure("cannot \(failure.call) a temporary file beside '\(target)'", failure.code)
        }
    }

    /// Writes the bytes of `data` (see `write(_:)`).
    package func write(_ data: some ContiguousBytes) throws {
        try data.withUnsafeBytes { try write($0) }
    }

    /// Where the bytes go: `path`, or the target of the symbolic link `path` is.
    ///
    /// - Throws: `.invalidDestination` when that is not a new path or a regular file, or is an
    ///   input.
    private func destination() throws(BlobStreamError) -> String {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            // Nothing there (a new file), or a path the write reports (a missing folder).
            return path
        }
        let isLink = info.st_mode & S_IFMT == S_IFLNK
        if isLink && stat(path, &info) != 0 {
            throw refusal("it is a symbolic link that leads to no file (\(String(cString: strerror(errno))))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw refusal("it is \(fileKind(info.st_mode)), not a regular file")
        }
        if let input = inputs.first(where: { $0.device == UInt64(info.st_dev) && $0.inode == UInt64(info.st_ino) }) {
            throw refusal("it is the input '\(input.name)'\(input.name == path ? "" : " (the same file)")")
        }
        guard isLink else { return path }
        guard let resolved = realpath(path, nil) else {
            throw refusal("it is a symbolic link that cannot be resolved (\(String(cString: strerror(errno))))")
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private func refusal(_ why: String) -> BlobStreamError {
        BlobStreamError(
            .invalidDestination,
            "cannot write \(role) to '\(path)': \(why); BlobStream writes only to a new path or over a regular file that is not one of its inputs"
        )
    }

    private func failure(_ what: String, _ code: Int32) -> BlobStreamError {
        let reason = code == 0 ? "" : ": " + String(cString: strerror(code))
        return BlobStreamError(
            .ioFailed, "cannot write \(role) to '\(path)': \(what)\(reason)", cause: code == 0 ? nil : ErrnoError(code))
    }
}

/// `a regular file`, `a FIFO`, `a directory`, … for a `stat` mode, for messages.
package func fileKind(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFREG: "a regular file"
    case S_IFDIR: "a directory"
    case S_IFIFO: "a FIFO"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFSOCK: "a socket"
    case S_IFLNK: "a symbolic link"
    default: "a file of unknown kind"
    }
}
