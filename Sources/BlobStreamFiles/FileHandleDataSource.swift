import BlobStream
import BlobStreamSystem
import Foundation

/// A data source over any open `FileHandle`, so over any descriptor: a regular file, a pipe,
/// a FIFO, a socket, a character device.
///
/// ```swift
/// let stdin = FileHandleDataSource(fileHandle: .standardInput)
/// for try await chunk in BlobChunks(dataSource: stdin) { hasher.update(data: chunk) }
/// ```
///
/// What the descriptor is (`fstat`, at creation) decides how it is read:
///
/// - **A regular file**: as `FileDataSource` does, with `pread` from a position of the
///   source's own. Offset 0 is the start of the file, whatever the handle's current offset;
///   the handle's offset is neither used nor moved. `length` is the size at `open()` (nil
///   before, so an offset past the end set before `open()` fails the open with
///   `.invalidOffset`; after `open()` it is refused); `offsetCapability` is `.seek`; a file
///   that shrinks while read is an error (`.changed`).
/// - **Anything else** (pipe, FIFO, socket, character device): sequential `read`s, `length`
///   is `nil`, `offsetCapability` is `.readAndDiscard`: an offset set before `open()`, or
///   after it forward from the current position, is reached by reading and discarding bytes
///   (into one buffer reused) at the next read. Moving back before bytes already read is
///   refused (`setProperty` returns false). An offset past the end is an error at the read
///   that finds the end (`.invalidOffset`, naming the offset). A read blocks until the
///   writer sends bytes or closes its end (each read polls the descriptor, so
///   `interrupt()`, which `BlobInputStream.close()` calls from any thread, ends the wait);
///   a non-blocking descriptor is waited on the same way. Interrupted system calls
///   (`EINTR`) are retried.
/// - A directory, or a descriptor that is not open, fails at `open()` (`.unsupported`,
///   `.ioFailed`).
///
/// `open()` completes at once on the caller's thread (`completionContext` is `.caller`).
/// Errors are `BlobStreamError`s naming the descriptor and what it points at (a path or
/// `pipe:[…]`), with the `ErrnoError` as cause.
///
/// Ownership: the source keeps a reference to the handle but does not close it unless it was
/// made with `closeOnClose: true`; otherwise the descriptor stays open after `close()`, and
/// is yours to close (after the source is closed). The source never changes the handle's
/// file offset when it is a regular file; for a pipe, the bytes read are gone for everyone.
///
/// Like every source, its `open`, `read`, `setProperty` and `close` are called by one owner
/// at a time (a `BlobInputStream` does that); it is not `Sendable`.
public final class FileHandleDataSource: BlobDataSource {
    /// The observable state.
    public let state = BlobDataSourceState()

    /// The handle given at creation.
    public let fileHandle: FileHandle

    /// Whether `close()` also closes `fileHandle`.
    public let closeOnClose: Bool

    /// How the descriptor is read, decided by `fstat` at creation.
    private enum Kind {
        /// A regular file: `pread`.
        case positional
        /// A pipe, FIFO, socket or character device: `read`.
        case sequential
        /// A kind the source refuses (a directory), or a descriptor `fstat` failed on.
        case refused(BlobStreamError)
    }

    private let file: SystemFile
    /// A pipe that `interrupt()` writes to, to end a `read` blocked in the kernel (nil for a
    /// regular file, whose reads end on their own, or when the system refused a pipe).
    private let wake: WakeupPipe?
    private let kind: Kind
    private let name: String
    private var positional: PositionalReader?
    private var sequential: SequentialReader?
    /// Where reading starts, until `open()`.
    private var startOffset: Int64 = 0
    private var opened = false, closed = false

    /// Makes a source over `fileHandle`; nothing is read until `open()`.
    ///
    /// - Parameters:
    ///   - fileHandle: any open handle; the source reads its `fileDescriptor`.
    ///   - closeOnClose: when true, `close()` also closes the handle. False by default: the
    ///     handle stays open and yours.
    public init(fileHandle: FileHandle, closeOnClose: Bool = false) {
        self.fileHandle = fileHandle
        self.closeOnClose = closeOnClose
        let fd = fileHandle.fileDescriptor
        let file = SystemFile(rawDescriptor: fd)
        self.file = file
        let name = file.target.map { "fd \(fd) ('\($0)')" } ?? "fd \(fd)"
        self.name = name
        switch file.status() {
        case .failure(let failure):
            kind = .refused(FileErrors.inspect(failure, name))
        case .success(let status):
            switch status.kind {
            case .regular: kind = .positional
            case .directory: kind = .refused(FileErrors.unsupported(status.kind, name, hint: ""))
            default: kind = .sequential
            }
        }
        if case .sequential = kind { wake = WakeupPipe.make() } else { wake = nil }
    }

    deinit {
        sequential?.deallocate()
        wake?.close()
    }

    /// The file's size at `open()` for a regular file; `nil` before `open()` and for
    /// anything else (only reading to the end tells).
    public var length: Int64? { positional?.length }

    /// `.seek` for a regular file, `.readAndDiscard` for a pipe, FIFO, socket or device,
    /// `.none` for a descriptor that will fail to open.
    public var offsetCapability: BlobOffsetCapability {
        switch kind {
        case .positional: .seek
        case .sequential: .readAndDiscard
        case .refused: .none
        }
    }

    /// `.caller`: the source changes its state only inside the owner's calls.
    public var completionContext: BlobCompletionContext { .caller }

    /// Completes at once: announces `isOpenCompleted`, then `hasBytesAvailable` or (an empty
    /// regular file, or an offset at its end) `isAtEnd`; or sets `state.error`.
    public func open() {
        guard !opened, !closed else { return }
        opened = true
        switch kind {
        case .refused(let error):
            state.error = error
        case .sequential:
            sequential = SequentialReader(file: file, wake: wake, offset: startOffset, name: name, state: state)
        case .positional:
            switch file.status() {
            case .failure(let failure):
                state.error = FileErrors.inspect(failure, name)
            case .success(let status):
                guard startOffset <= status.size else {
                    state.error = FileErrors.pastEnd(name, offset: startOffset, length: status.size)
                    return
                }
                positional = PositionalReader(
                    file: file, length: status.size, offset: startOffset, name: name, state: state)
            }
        }
    }

    /// One `pread` (regular file) or one `read` (anything else, after discarding up to a
    /// pending offset) of up to `maxLength` bytes.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        // Optional chaining mutates the readers in place: no copy, no allocation, no lock.
        if let n = positional?.read(buffer, maxLength: maxLength, state: state) {
            if n < 0 { positional = nil } // sticky: every later call fails the same way
            return n
        }
        if let n = sequential?.read(buffer, maxLength: maxLength, state: state) {
            if n < 0 { dropSequential() }
            return n
        }
        if state.error == nil {
            state.error = closed ? FileErrors.closed(name) : FileErrors.notOpen(name)
        }
        return -1
    }

    /// `.fileCurrentOffsetKey`: an `NSNumber` of the offset of the next byte delivered
    /// (before `open()`, the offset reading will start at).
    public func property(forKey key: Stream.PropertyKey) -> Any? {
        guard key == .fileCurrentOffsetKey else { return nil }
        if let positional { return NSNumber(value: positional.position) }
        if let sequential { return NSNumber(value: sequential.target) }
        return opened || closed ? nil : NSNumber(value: startOffset)
    }

    /// `.fileCurrentOffsetKey`: before `open()`, where reading starts. After: for a regular
    /// file, moves there (refused past the length); otherwise forward only (refused before
    /// the bytes already read, or past an end already met). Refused after an error or
    /// `close()`.
    public func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let offset = BlobOffset.value(from: property) else { return false }
        if positional != nil { return positional!.seek(to: offset, state: state) }
        if sequential != nil { return sequential!.seek(to: offset) }
        guard !opened, !closed, offsetCapability != .none else { return false }
        startOffset = offset
        return true
    }

    /// Ends a `read` waiting for a pipe, FIFO, socket or device on another thread: it
    /// returns −1 with `.closed`, as does every later read. Safe from any thread; signals an
    /// pipe that each such read polls beside the descriptor.
    public func interrupt() {
        wake?.signal()
    }

    /// Stops reading; closes `fileHandle` only when made with `closeOnClose: true`. Later
    /// reads return −1. Safe to call more than once.
    public func close() {
        guard !closed else { return }
        closed = true
        positional = nil
        dropSequential()
        if closeOnClose {
            try? fileHandle.close()
        }
    }

    private func dropSequential() {
        sequential?.deallocate()
        sequential = nil
    }
}
