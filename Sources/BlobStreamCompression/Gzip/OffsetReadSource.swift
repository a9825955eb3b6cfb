import BlobStream
import BlobStreamSystem

/// A minimal synchronous, seekable source that reads by offset through a function: a file
/// opened by path for the index builders (`PositionalFile`), a job's compressed bytes for the
/// parallel reader's workers (standing at their offsets in the file). The kit may not depend
/// on a source module (`BlobStreamFiles`), so it carries this one.
///
/// Not thread-safe: one owner calls it, one call at a time.
final class OffsetReadSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: one owner calls it, one call at a time.
    typealias ReadAt = (UnsafeMutablePointer<UInt8>, Int, Int64) throws(BlobStreamError) -> Int

    let state = BlobDataSourceState()
    private let bounds: ClosedRange<Int64>
    private let readAt: ReadAt
    private var offset: Int64

    /// A source over the bytes `readAt(buffer, count, offset)` reads (0 at their end), which
    /// stand at the offsets `start` through `end`.
    init(from start: Int64 = 0, to end: Int64 = .max, _ readAt: @escaping ReadAt) {
        bounds = start...end
        offset = start
        self.readAt = readAt
    }

    /// A source over the file `file`, from its first byte.
    convenience init(_ file: PositionalFile) {
        self.init { (buffer, count, offset) throws(BlobStreamError) in
            try file.read(into: buffer, count: count, at: offset)
        }
    }

    var length: Int64? { nil }
    var offsetCapability: BlobOffsetCapability { .seek }
    var completionContext: BlobCompletionContext { .caller }

    func open() {
        state.isOpenCompleted = true
        state.hasBytesAvailable = true
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        do {
            let n = try readAt(buffer, Int(min(Int64(maxLength), bounds.upperBound - offset)), offset)
            if n == 0 { state.isAtEnd = true }
            offset += Int64(n)
            return n
        } catch {
            state.error = error
            return -1
        }
    }

    var readOffset: Int64? { offset }

    func seek(to offset: Int64) throws(BlobStreamError) {
        guard bounds.contains(offset) else {
            throw BlobStreamError(.invalidOffset, "offset \(offset) is outside the bytes at \(bounds)")
        }
        self.offset = offset
        state.isAtEnd = false
        state.hasBytesAvailable = true
    }

    func close() {}
}
