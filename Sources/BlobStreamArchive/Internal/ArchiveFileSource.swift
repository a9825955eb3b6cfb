import BlobStream
import BlobStreamSystem
import Foundation

/// The upstream of an archive opened by path: a regular file read with `pread`, seekable.
///
/// This module may not depend on `BlobStreamFiles` (source modules never import their
/// siblings), so it carries this small reader of its own; anyone who wants
/// `FileDataSource`'s full behaviour hands one in as the upstream instead.
final class ArchiveFileSource: BlobDataSource {
    let state = BlobDataSourceState()
    let path: String
    private var file: SystemFile?
    private var size: Int64?
    private var position: Int64 = 0
    private var identity: String?
    /// The file's modification time once open.
    private(set) var modified: BlobContentIdentity.Timestamp?

    init(path: String) { self.path = path }

    deinit { file?.close() }

    var length: Int64? { size }
    var offsetCapability: BlobOffsetCapability { .seek }

    func open() {
        guard file == nil, size == nil, state.error == nil else { return }
        guard !path.utf8.contains(0) else {
            state.error = BlobStreamError(
                .notFound, "cannot open archive '\(BlobURL.escapedText(path))': a path cannot contain a NUL byte")
            return
        }
        let file: SystemFile
        switch SystemFile.openForReading(path) {
        case .success(let opened): file = opened
        case .failure(let failure):
            state.error = failure.error("archive '\(path)'")
            return
        }
        self.file = file
        let info: FileStatus
        switch file.status() {
        case .success(let status): info = status
        case .failure(let failure):
            state.error = failure.error("archive '\(path)'", code: .ioFailed)
            return
        }
        guard info.kind == .regular else {
            let what =
                info.kind == .directory
                ? "a directory" : "not a regular file (hand in a FileHandleDataSource as the upstream)"
            state.error = BlobStreamError(.unsupported, "cannot read archive '\(path)': it is \(what)")
            return
        }
        size = info.size
        identity = info.identity
        modified = info.modified
        state.isOpenCompleted = true
        if size == 0 { state.isAtEnd = true } else { state.hasBytesAvailable = true }
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard let file, let size, state.error == nil else { return -1 }
        let remaining = size - position
        if remaining <= 0 {
            state.isAtEnd = true
            return 0
        }
        let count = Int(min(Int64(maxLength), remaining))
        switch file.read(into: buffer, count: count, at: position) {
        case .success(let n) where n > 0:
            position += Int64(n)
            if position == size { state.isAtEnd = true }
            return n
        case .success:
            state.error = BlobStreamError(
                .changed,
                "archive '\(path)' changed while being read: it ends at offset \(position), but was \(size) bytes long when opened"
            )
            return -1
        case .failure(let failure):
            state.error = failure.error("archive '\(path)'", offset: position, code: .ioFailed)
            return -1
        }
    }

    /// The offset of the next byte (before `open()`, where reading starts).
    var readOffset: Int64? { position }

    /// Moves to `offset`; once open, refused past the size (`.invalidOffset`). Refused after
    /// a failure, with the failure as cause. Before `open()`, any offset is kept.
    func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else {
            throw BlobStreamError(
                .invalidOffset, "cannot move archive '\(path)' to offset \(offset): an offset is 0 or more")
        }
        if let failure = state.error {
            throw BlobStreamError(
                .invalidOffset, "cannot move archive '\(path)' to offset \(offset): reading it failed", cause: failure)
        }
        guard let size else {
            position = offset
            return
        }
        guard offset <= size else {
            throw BlobStreamError(
                .invalidOffset, "offset \(offset) is past the end of archive '\(path)' (\(size) bytes)")
        }
        position = offset
        if offset == size {
            state.isAtEnd = true
        } else {
            state.isAtEnd = false
            state.hasBytesAvailable = true
        }
    }

    /// `.blobContentIdentityKey` once open; `.fileCurrentOffsetKey` through `readOffset`.
    func property(forKey key: Stream.PropertyKey) -> Any? {
        key == .blobContentIdentityKey ? (file != nil ? identity : nil) : offsetProperty(forKey: key)
    }

    func close() {
        file?.close()
        file = nil
    }
}
