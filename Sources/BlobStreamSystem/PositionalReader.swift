import BlobStream

/// Reads a regular file with `pread` from a position it keeps itself (the descriptor's own
/// offset is never used nor moved), up to the length `fstat` gave at open: a consistent
/// snapshot. Shared by `FileDataSource` and `FileHandleDataSource` over a regular file, and
/// by the archive module's reader of an archive opened by path.
///
/// Does not own the descriptor. The hot path (`read`) makes one `pread` straight into the
/// caller's buffer and touches `state` only at the end or on an error.
package struct PositionalReader {
    package let file: SystemFile
    /// The size at open; bytes appended later are not read, a file that shrinks below it is
    /// an error.
    package let length: Int64
    /// The offset of the next byte.
    package private(set) var position: Int64
    /// How messages name the file: `'/data/a.mov'`, `archive '/x.tar'`.
    package let name: String

    /// Starts at `offset` (≤ `length`, checked by the caller) and announces the first state:
    /// `isOpenCompleted`, then `hasBytesAvailable` or, when nothing remains, `isAtEnd`.
    package init(file: SystemFile, length: Int64, offset: Int64, name: String, state: BlobDataSourceState) {
        self.file = file
        self.length = length
        self.position = offset
        self.name = name
        state.isOpenCompleted = true
        if position >= length {
            state.isAtEnd = true
        } else {
            state.hasBytesAvailable = true
        }
    }

    /// One `pread` of up to `maxLength` bytes at the current position.
    @inline(__always)
    package mutating func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int, state: BlobDataSourceState) -> Int
    {
        let remaining = length - position
        if remaining <= 0 {
            state.isAtEnd = true // already true unless moved there with `seek`: free then
            return 0
        }
        let count = Int64(maxLength) < remaining ? maxLength : Int(remaining)
        switch file.read(into: buffer, count: count, at: position) {
        case .success(let n) where n > 0:
            position += Int64(n)
            if position == length { state.isAtEnd = true }
            return n
        case .success:
            // The file ends before the length seen at open: it shrank. Never a short clean end.
            state.error = BlobStreamError(
                .changed,
                "\(name) changed while being read: it ends at offset \(position), but was \(length) bytes long when opened"
            )
            return -1
        case .failure(let failure):
            state.error = failure.error(name, offset: position, code: .ioFailed)
            return -1
        }
    }

    /// Moves to `offset` (≥ 0, checked by the caller); refuses past the length
    /// (`.invalidOffset` naming the file, the offset and the length), changing nothing.
    /// Announces the end when the offset is the length, and bytes again when moving back
    /// from the end.
    package mutating func seek(to offset: Int64, state: BlobDataSourceState) throws(BlobStreamError) {
        guard offset <= length else { throw Self.pastEnd(name, offset: offset, length: length) }
        position = offset
        if position == length {
            state.isAtEnd = true
        } else {
            if state.isAtEnd { state.isAtEnd = false }
            state.hasBytesAvailable = true
        }
    }

    /// An offset past the end of a file `length` bytes long, named `name`.
    package static func pastEnd(_ name: String, offset: Int64, length: Int64) -> BlobStreamError {
        BlobStreamError(.invalidOffset, "offset \(offset) is past the end of \(name) (\(length) bytes)")
    }
}
