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
    /// Reads the file once open (from the offset asked for before, at most its size).
    private var reader: PositionalReader?
    /// Before open: where reading starts.
    private var position: Int64 = 0
    private var identity: String?
    /// The file's modification time once open.
    private(set) var modified: BlobContentIdentity.Timestamp?

    init(path: String) { self.path = path }

    deinit { file?.close() }

    var length: Int64? { reader?.length }
    var offsetCapability: BlobOffsetCapability { .seek }

    func open() {
        guard file == nil, reader == nil, state.error == nil else { return }
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
        identity = info.identity
        modified = info.modified
        reader = PositionalReader(
            file: file, length: info.size, offset: min(position, info.size), name: "archive '\(path)'", state: state)
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard reader != nil, state.error == nil else { return -1 }
        return reader!.read(buffer, maxLength: maxLength, state: state)
    }

    /// The offset of the next byte (before `open()`, where reading starts).
    var readOffset: Int64? { reader?.position ?? position }

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
        guard reader != nil else {
            position = offset
            return
        }
        try reader!.seek(to: offset, state: state)
    }

    /// `.blobContentIdentityKey` once open; `.fileCurrentOffsetKey` through `readOffset`.
    func property(forKey key: Stream.PropertyKey) -> Any? {
        key == .blobContentIdentityKey ? (file != nil ? identity : nil) : offsetProperty(forKey: key)
    }

    func close() {
        position = reader?.position ?? position
        reader = nil
        file?.close()
        file = nil
    }
}
