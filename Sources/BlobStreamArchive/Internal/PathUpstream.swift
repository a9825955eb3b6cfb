import BlobStream
import Foundation
import Glibc

/// The upstream of an archive opened by path: a regular file read with `pread`, seekable.
///
/// This module may not depend on `BlobStreamFiles` (source modules never import their
/// siblings), so it carries this small reader of its own; anyone who wants
/// `FileDataSource`'s full behaviour hands one in as the upstream instead.
final class PathUpstream: BlobDataSource {
    let state = BlobDataSourceState()
    let path: String
    private var fd: Int32 = -1
    private var size: Int64?
    private var position: Int64 = 0
    private var identity: String?

    init(path: String) { self.path = path }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    var length: Int64? { size }
    var offsetCapability: BlobOffsetCapability { .seek }

    func open() {
        guard fd < 0, size == nil, state.error == nil else { return }
        guard !path.utf8.contains(0) else {
            state.error = BlobStreamError(
                .notFound, "cannot open archive '\(BlobURL.escapedText(path))': a path cannot contain a NUL byte")
            return
        }
        var d: Int32
        repeat { d = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) } while d < 0 && errno == EINTR
        guard d >= 0 else {
            let code = errno
            let (kind, what): (BlobStreamError.Code, String) =
                switch code {
                case ENOENT, ENOTDIR: (.notFound, "no such file")
                case EACCES, EPERM: (.permissionDenied, "permission denied")
                default: (.ioFailed, "open failed")
                }
            state.error = BlobStreamError(kind, "cannot open archive '\(path)': \(what)", cause: ErrnoError(code))
            return
        }
        fd = d
        var info = stat()
        guard fstat(d, &info) == 0 else {
            state.error = BlobStreamError(.ioFailed, "cannot inspect archive '\(path)'", cause: ErrnoError(errno))
            return
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            let what =
                info.st_mode & S_IFMT == S_IFDIR
                ? "a directory" : "not a regular file (hand in a FileHandleDataSource as the upstream)"
            state.error = BlobStreamError(.unsupported, "cannot read archive '\(path)': it is \(what)")
            return
        }
        size = Int64(info.st_size)
        identity = BlobContentIdentity.file(info)
        state.isOpenCompleted = true
        if size == 0 { state.isAtEnd = true } else { state.hasBytesAvailable = true }
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard fd >= 0, let size, state.error == nil else { return -1 }
        let remaining = size - position
        if remaining <= 0 {
            state.isAtEnd = true
            return 0
        }
        let count = Int(min(Int64(maxLength), remaining))
        while true {
            let n = pread(fd, buffer, count, off_t(position))
            if n > 0 {
                position += Int64(n)
                if position == size { state.isAtEnd = true }
                return n
            }
            if n == 0 {
                state.error = BlobStreamError(
                    .changed,
                    "archive '\(path)' changed while being read: it ends at offset \(position), but was \(size) bytes long when opened"
                )
                return -1
            }
            if errno == EINTR { continue }
            state.error = BlobStreamError(
                .ioFailed, "cannot read archive '\(path)' at offset \(position)", cause: ErrnoError(errno))
            return -1
        }
    }

    func property(forKey key: Stream.PropertyKey) -> Any? {
        switch key {
        case .fileCurrentOffsetKey: NSNumber(value: position)
        case .blobContentIdentityKey: fd >= 0 ? identity : nil
        default: nil
        }
    }

    func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let offset = BlobOffset.value(from: property), state.error == nil else {
            return false
        }
        if let size {
            guard offset <= size else { return false }
            position = offset
            if offset == size {
                state.isAtEnd = true
            } else {
                state.isAtEnd = false
                state.hasBytesAvailable = true
            }
        } else {
            position = offset
        }
        return true
    }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }
}
