import Foundation

/// A source over bytes already in memory (`Data`): open completes at once, offsets seek in
/// constant time. Use it for small fixed parts of a composed body (multipart headers).
public final class DataBytesSource: BlobDataSource {
    /// The observable state.
    public let state = BlobDataSourceState()
    /// The bytes delivered.
    public let data: Data
    private var position = 0

    /// Makes a source over `data`.
    public init(_ data: Data) { self.data = data }

    /// `data.count`.
    public var length: Int64? { Int64(data.count) }
    /// `.seek`.
    public var offsetCapability: BlobOffsetCapability { .seek }

    /// Opens at once: the bytes are in memory.
    public func open() {
        state.isOpenCompleted = true
        announce()
    }

    private func announce() {
        if position >= data.count {
            state.isAtEnd = true
        } else {
            state.isAtEnd = false
            state.hasBytesAvailable = true
        }
    }

    /// Copies up to `maxLength` bytes from the current offset.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let n = min(maxLength, data.count - position)
        guard n > 0 else {
            state.isAtEnd = true
            return 0
        }
        data.withUnsafeBytes { raw in
            buffer.update(from: raw.bindMemory(to: UInt8.self).baseAddress! + position, count: n)
        }
        position += n
        if position == data.count { state.isAtEnd = true }
        return n
    }

    /// The offset of the next byte.
    public var readOffset: Int64? { Int64(position) }

    /// Moves anywhere up to the end (O(1)); past it is refused (`.invalidOffset`).
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0, offset <= data.count else {
            throw BlobStreamError(.invalidOffset, "offset \(offset) is outside the \(data.count) bytes")
        }
        position = Int(offset)
        if state.isOpenCompleted { announce() }
    }

    /// Nothing to release: the bytes stay in memory until the source is dropped.
    public func close() {}
}
