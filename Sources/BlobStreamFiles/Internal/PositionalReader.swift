import BlobStream
import BlobStreamSystem

/// Reads a regular file with `pread` from a position it keeps itself (the descriptor's own
/// offset is never used nor moved), up to the length `fstat` gave at open: a consistent
/// snapshot. Shared by `FileDataSource` and `FileHandleDataSource` over a regular file.
///
/// Does not own the descriptor. The hot path (`read`) makes one `pread` straight into the
/// caller's buffer and touches `state` only at the end or on an error.
struct PositionalReader {
    let file: SystemFile
    /// The size at open; bytes appended later are not read, a file that shrinks below it is
    /// an error.
    let length: Int64
    /// The offset of the next byte.
    private(set) var position: Int64
    /// Quoted name for messages.
    let name: String

    /// Starts at `offset` (≤ `length`, checked by the caller) and announces the first state:
    /// `isOpenCompleted`, then `hasBytesAvailable` or, when nothing remains, `isAtEnd`.
    init(file: SystemFile, length: Int64, offset: Int64, name: String, state: BlobDataSourceState) {
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
    mutating func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int, state: BlobDataSourceState) -> Int {
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
            state.error = FileErrors.shrank(name, offset: position, length: length)
            return -1
        case .failure(let failure):
            state.error = FileErrors.read(failure, name, offset: position)
            return -1
        }
    }

    /// Moves to `offset`; refuses (returns false) past the length. Announces the end when
    /// the offset is the length, and bytes again when moving back from the end.
    mutating func seek(to offset: Int64, state: BlobDataSourceState) -> Bool {
        guard offset >= 0, offset <= length else { return false }
        position = offset
        if position == length {
            state.isAtEnd = true
        } else {
            if state.isAtEnd { state.isAtEnd = false }
            state.hasBytesAvailable = true
        }
        return true
    }
}
