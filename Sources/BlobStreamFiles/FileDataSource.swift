import BlobStream
import BlobStreamSystem
import Foundation

/// A data source that reads a regular file by path, with `pread`.
///
/// ```swift
/// let stream = BlobInputStream(dataSource: FileDataSource(path: "/data/video.mp4"))
/// try stream.seek(to: 1_000_000)  // resume
/// stream.open()
/// ```
///
/// - `open()` opens the file (`O_RDONLY | O_CLOEXEC`) and completes at once, on the
///   caller's thread (`completionContext` is `.caller`). The length is the size `fstat`
///   gives then; it is `nil` before `open()`.
/// - Reads are `pread`s at the source's own position, straight into the caller's buffer,
///   sized by the caller's `maxLength`: offsets are O(1) (`offsetCapability` is `.seek`)
///   and past 4 GiB work.
/// - A consistent snapshot: a file replaced at its path (renamed over) keeps being read from
///   the descriptor opened; bytes appended after `open()` are not read; a file that shrinks
///   below the length seen at `open()` is an error (`.changed`, naming the path and the
///   offset), never a short clean end.
/// - Offsets (`seek(to:)`, or `.fileCurrentOffsetKey`): an offset set before `open()` is
///   where reading starts (an offset past the end then fails the open with `.invalidOffset`,
///   since the length is not known before); after `open()` it moves there, and an offset
///   past the length is refused (`.invalidOffset`: `offset 900 is past the end of
///   '/data/a.mov' (800 bytes)`).
/// - Errors are `BlobStreamError`s naming the path (and the system call that failed:
///   `open '/data/a.mov': No such file or directory (errno 2)`), with the `ErrnoError` as cause:
///   `.notFound` (missing path, a path through a non-directory), `.permissionDenied`,
///   `.unsupported` (a directory, a FIFO, a device, a socket: use `FileHandleDataSource` for
///   those), `.ioFailed`, `.changed`, `.invalidOffset`.
/// - `close()` closes the descriptor.
///
/// Like every source, its `open`, `read`, `seek` and `close` are called by one owner
/// at a time (a `BlobInputStream` does that); it is not `Sendable`.
public final class FileDataSource: BlobDataSource {
    /// The observable state.
    public let state = BlobDataSourceState()

    /// The path given at creation.
    public let path: String

    /// Non-nil while open: the position, the length and the descriptor.
    private var reader: PositionalReader?
    /// Where reading starts, until `open()`.
    private var startOffset: Int64 = 0
    private var opened = false, closed = false
    private var file: SystemFile?
    /// What `.blobContentIdentityKey` answers once open.
    private var identity: String?

    /// Makes a source for the file at `path`; nothing is opened until `open()`.
    public init(path: String) {
        self.path = path
    }

    deinit {
        file?.close()
    }

    /// The path, quoted, for messages.
    private var name: String { "'\(path)'" }

    /// The file's size as `fstat` gave it at `open()`; `nil` before.
    public var length: Int64? {
        reader?.length
    }

    /// `.seek`: `pread` reaches any offset in constant time.
    public var offsetCapability: BlobOffsetCapability { .seek }

    /// `.caller`: the source changes its state only inside the owner's calls.
    public var completionContext: BlobCompletionContext { .caller }

    /// Opens the file and announces `isOpenCompleted`, then `hasBytesAvailable` or (an
    /// empty file, or an offset at the end) `isAtEnd`; or sets `state.error`.
    public func open() {
        guard !opened, !closed else { return }
        opened = true
        let offset = startOffset
        let file: SystemFile
        guard !path.utf8.contains(0) else { return fail(FileSources.nulInPath(path)) }
        switch SystemFile.openForReading(path, nonBlocking: true) {
        case .success(let opened): file = opened
        case .failure(let failure): return fail(FileErrors.open(failure, name))
        }
        self.file = file
        let status: FileStatus
        switch file.status() {
        case .success(let s): status = s
        case .failure(let failure): return fail(FileErrors.inspect(failure, name))
        }
        guard status.kind == .regular else {
            let hint = status.kind == .directory ? "" : ", not a regular file (FileHandleDataSource reads those)"
            return fail(FileErrors.unsupported(status.kind, name, hint: hint))
        }
        if case .failure(let failure) = file.clearNonBlocking() {
            return fail(FileErrors.inspect(failure, name))
        }
        guard offset <= status.size else {
            return fail(FileErrors.pastEnd(name, offset: offset, length: status.size))
        }
        identity = status.identity
        reader = PositionalReader(file: file, length: status.size, offset: offset, name: name, state: state)
    }

    private func fail(_ error: BlobStreamError) {
        file?.close()
        file = nil
        state.error = error
    }

    /// Reads up to `maxLength` bytes at the current position with one `pread`. Sets
    /// `isAtEnd` with the read that returns the last bytes.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        // Optional chaining mutates the reader in place: no copy, no allocation, no lock.
        if let n = reader?.read(buffer, maxLength: maxLength, state: state) {
            if n < 0 { reader = nil } // sticky: every later call fails the same way
            return n
        }
        if state.error == nil {
            state.error = closed ? FileErrors.closed(name) : FileErrors.notOpen(name)
        }
        return -1
    }

    /// The offset of the next byte; before `open()`, the offset reading will start at. Nil
    /// after a failure or `close()`.
    public var readOffset: Int64? {
        if let reader { return reader.position }
        return opened || closed ? nil : startOffset
    }

    /// Before `open()`, where reading starts (checked against the length at open); after,
    /// moves there in O(1).
    ///
    /// - Throws: `.invalidOffset` for a negative offset, one past the length (after `open()`),
    ///   or after a failure (the failure is the cause); `.closed` after `close()`. A refused
    ///   move changes nothing.
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else { throw FileErrors.negativeOffset(name, offset: offset) }
        if reader != nil { return try reader!.seek(to: offset, state: state) }
        guard !opened, !closed else {
            throw FileErrors.cannotMove(name, offset: offset, closed: closed, failure: state.error)
        }
        startOffset = offset
    }

    /// `.blobContentIdentityKey`: once open, a `String` made of the file's device, inode,
    /// size and modification and change times. `.fileCurrentOffsetKey`: `readOffset` as an
    /// `NSNumber` (the original's form; `setProperty` with it calls `seek(to:)`).
    public func property(forKey key: Stream.PropertyKey) -> Any? {
        if key == .blobContentIdentityKey { return reader != nil ? identity : nil }
        return offsetProperty(forKey: key)
    }

    /// Closes the descriptor; later reads return −1. Safe to call more than once.
    public func close() {
        closed = true
        reader = nil
        file?.close()
        file = nil
    }
}

extension FileDataSource: BlobStoredRegionProviding {
    /// Once open, the rest of the file from `readOffset` to the length seen at `open()`, in
    /// the descriptor the source reads (the file opened then, even if another was put at the
    /// path since); nil before `open()`, at the end, after a failure or `close()`. A file
    /// that shrank since moves fewer bytes than `count`: reading on then fails with `.changed`.
    public var storedRegion: BlobStoredRegion? {
        guard let reader, reader.position < reader.length else { return nil }
        return BlobStoredRegion(
            descriptor: reader.file.descriptor.rawValue, fileOffset: reader.position,
            count: reader.length - reader.position)
    }
}
