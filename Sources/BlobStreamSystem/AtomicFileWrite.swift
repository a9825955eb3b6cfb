import BlobStream
import Glibc // O_TMPFILE, linkat, opendir: what swift-system does not offer
import SystemPackage

/// Writes a whole file so that a reader sees the old file or the new one, never a part, and
/// so that a run killed at any moment leaves nothing behind that a later run does not remove.
///
/// The bytes go to an unnamed file in the destination's folder (`O_TMPFILE`: the kernel
/// frees it when the process dies), flushed to the disk, then given a temporary name
/// (`linkat` of `/proc/self/fd/N`) and renamed over the destination at once. Only in the
/// instant between those two calls does a name exist; a later write to the same destination
/// removes such a name left by a killed run (`.NAME.blobstream-…`, untouched for ten
/// minutes). Where the folder's file system has no `O_TMPFILE`, a named temporary file is
/// written instead, and the same clean-up applies to it.
package enum AtomicFileWrite {
    /// The prefix of the temporary names, after the destination's own: `.NAME.blobstream-XXXX`.
    package static let marker = ".blobstream-"

    /// How long a temporary name must have been untouched before a later write removes it
    /// as a killed run's leftover (a live run's name exists for an instant, or is being
    /// written to).
    package static let staleAfterSeconds = 600

    /// `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY`; a macro Swift does not import). `__O_TMPFILE`
    /// is 020000000 on every architecture Linux has where it differs from O_DIRECTORY's.
    private static let temporaryFileFlag: Int32 = 0o20000000 | O_DIRECTORY

    /// Writes `bytes` to `target` (a path whose folder exists), with `mode` (`nil`: 0666
    /// less the umask). `beforeRename` is asked just before the new file replaces `target`;
    /// false stops there (`ECANCELED`, nothing replaced). Fails naming the step and the
    /// system's error.
    package static func write(
        _ bytes: UnsafeRawBufferPointer, to target: String, mode: mode_t? = nil,
        beforeRename: () -> Bool = { true }
    ) -> Result<Void, SystemCallFailure> {
        do {
            return try write(to: target, mode: mode, beforeRename: beforeRename) { try $0(bytes) }
        } catch {
            // Only the writes `contents` makes throw here, and those become the result.
            return .failure(error as? SystemCallFailure ?? SystemCallFailure("write", .ioError))
        }
    }

    /// Writes what `contents` hands its `write` function, in turn, to `target`, as
    /// `write(_:to:mode:beforeRename:)` writes its bytes: the destination is replaced only
    /// when `contents` returned. An error `contents` throws (a source that failed) leaves
    /// the destination as it was and is rethrown; a failed write is the result.
    /// `flushes: false` skips the `fsync` before the rename, for a file whose every read
    /// checks it whole (the block cache's: its CRC-32C), where a power cut may leave a new
    /// name on bytes not yet on the disk. `removesLeftovers: false` leaves the clean-up of
    /// killed runs' temporary names to the caller (one that writes many files to a large
    /// folder, and scans it anyway: the block cache).
    package static func write(
        to target: String, mode: mode_t? = nil, flushes: Bool = true, removesLeftovers: Bool = true,
        beforeRename: () -> Bool = { true },
        contents: (_ write: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws -> Result<Void, SystemCallFailure> {
        let slash = target.lastIndex(of: "/")
        let folder = slash.map { $0 == target.startIndex ? "/" : String(target[..<$0]) } ?? "."
        let name = slash.map { String(target[target.index(after: $0)...]) } ?? target
        if removesLeftovers { removeLeftovers(in: folder, of: name) }
        let stem = (name.utf8.count <= 200 ? "." + name : "") + marker
        var descriptor = open(folder, temporaryFileFlag | O_WRONLY | O_CLOEXEC, mode ?? 0o666)
        var temporary: String?
        if descriptor < 0 {
            // No O_TMPFILE on this file system: a named file, removed on every failure.
            switch createNamed(in: folder, stem: stem, mode: mode ?? 0o666) {
            case .failure(let error): return .failure(SystemCallFailure("open", error))
            case .success(let made): (descriptor, temporary) = made
            }
        }
        if let mode { _ = fchmod(descriptor, mode) }
        var named = temporary
        defer { if let named { unlink(named) } }
        do {
            try contents { bytes in
                if case .failure(let failure) = writeAll(bytes, to: descriptor) { throw failure }
            }
        } catch let failure as SystemCallFailure {
            close(descriptor)
            return .failure(failure)
        } catch {
            close(descriptor)
            throw error
        }
        guard !flushes || fsync(descriptor) == 0 else {
            let code = errno
            close(descriptor)
            return .failure(SystemCallFailure("fsync", Errno(rawValue: code)))
        }
        if temporary == nil {
            switch link(descriptor, in: folder, stem: stem) {
            case .failure(let error):
                close(descriptor)
                return .failure(SystemCallFailure("linkat", error))
            case .success(let linked): named = linked
            }
        }
        guard close(descriptor) == 0 else { return .failure(SystemCallFailure("close", Errno(rawValue: errno))) }
        guard beforeRename() else { return .failure(SystemCallFailure("rename", .canceled)) }
        guard let from = named, rename(from, target) == 0 else {
            return .failure(SystemCallFailure("rename", Errno(rawValue: errno)))
        }
        named = nil
        return .success(())
    }

    /// Gives the unnamed file `descriptor` a new temporary name in `folder`.
    private static func link(_ descriptor: Int32, in folder: String, stem: String) -> Result<String, Errno> {
        for _ in 0..<100 {
            let candidate = folder + "/" + stem + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            if linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, candidate, AT_SYMLINK_FOLLOW) == 0 {
                return .success(candidate)
            }
            if errno != EEXIST { return .failure(Errno(rawValue: errno)) }
        }
        return .failure(.fileExists)
    }

    /// Creates a new named file (`O_EXCL`) in `folder`.
    private static func createNamed(in folder: String, stem: String, mode: mode_t) -> Result<(Int32, String), Errno> {
        for _ in 0..<100 {
            let candidate = folder + "/" + stem + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            let descriptor = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
            if descriptor >= 0 { return .success((descriptor, candidate)) }
            if errno != EEXIST { return .failure(Errno(rawValue: errno)) }
        }
        return .failure(.fileExists)
    }

    /// Removes the temporary names of `name` in `folder` that a killed run left (regular
    /// files untouched for `staleAfterSeconds`); anything else is left alone.
    package static func removeLeftovers(in folder: String, of name: String) {
        guard name.utf8.count <= 200, let directory = opendir(folder) else { return }
        defer { closedir(directory) }
        let prefix = "." + name + marker
        let now = time(nil)
        while let entry = readdir(directory) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard entryName.hasPrefix(prefix), entryName.utf8.count > prefix.utf8.count else { continue }
            let path = folder + "/" + entryName
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                now - info.st_mtim.tv_sec >= staleAfterSeconds
            else { continue }
            unlink(path)
        }
    }

    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Result<
        Void, SystemCallFailure
    > {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(SystemCallFailure("write", Errno(rawValue: errno)))
            }
            done += n
        }
        return .success(())
    }
}
