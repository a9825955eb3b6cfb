import BlobStream
import Foundation

// Where an `HTTPRangeDataSource` reads (its offset, moved by `seek(to:)`), and how it stops:
// an interrupt from any thread, or `close()`.
extension HTTPRangeDataSource {
    /// The offset of the next byte (before `open()`, where reading starts).
    public var readOffset: Int64? { closed || state.error != nil ? nil : position }

    /// Moves to `offset`: before `open()`, the first GET starts there; after, the next read
    /// gets the block there (the block in hand or read ahead when it holds it).
    ///
    /// - Throws: `.invalidOffset` for a negative offset or one past the known length;
    ///   `.closed` after `close()`.
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard !closed else { throw BlobStreamError(.closed, "\(name): cannot move a closed source") }
        guard offset >= 0 else { throw BlobStreamError(.invalidOffset, "offset \(offset) is negative (\(name))") }
        if let length, offset > length {
            throw BlobStreamError(.invalidOffset, "offset \(offset) is past the end of \(name) (\(length) bytes)")
        }
        if !opened {
            position = offset
            return
        }
        if state.error != nil {
            throw BlobStreamError(.invalidOffset, "\(name) failed: cannot move", cause: state.error)
        }
        position = offset
        // Before the first answer the length is not known: the open announces what it finds.
        guard let length, state.isOpenCompleted else { return }
        if offset == length {
            state.isAtEnd = true
        } else {
            if state.isAtEnd { state.isAtEnd = false }
            state.hasBytesAvailable = true
        }
    }

    /// Cancels the GETs in flight and wakes a waiting read (it returns −1 with `.closed`).
    /// Any thread.
    public func interrupt() {
        shared.lock.withLock { shared.interrupted = true }
        cancelAll()
    }

    /// Cancels the GETs in flight (the client is its pool's: it stays up).
    public func close() {
        guard !closed else { return }
        closed = true
        cancelAll()
        pipeline.close()
        answers.awaitingFirst = false
        answers.streamed = nil
    }
}
