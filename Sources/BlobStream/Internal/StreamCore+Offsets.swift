import Foundation

// `.fileCurrentOffsetKey` and the typed offsets of `BlobInputStream`: kept before open,
// passed to the source's `seek(to:)` after.
extension StreamCore {
    func setOffset(_ value: Any?) -> Bool {
        guard let offset = BlobOffset.value(from: value) else { return false }
        return (try? seek(to: offset)) != nil
    }

    /// Before open: where reading starts; after: moves the source (`BlobDataSource.seek`).
    func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else { throw BlobStreamError(.invalidOffset, "offset \(offset) is negative") }
        if source.offsetCapability == .none {
            throw BlobStreamError(.offsetUnsupported, "\(type(of: source)) cannot move to an offset")
        }
        if let length = source.length, offset > length {
            throw BlobStreamError(.invalidOffset, "offset \(offset) is past the end (\(length) bytes)")
        }
        condition.lock()
        switch status {
        case .notOpen:
            pendingOffset = offset
            condition.unlock()
            return
        case .closed, .error:
            let what = status == .closed ? "closed" : "failed"
            condition.unlock()
            throw BlobStreamError(.closed, "the stream is \(what): it cannot move to offset \(offset)")
        default:
            condition.unlock()
        }
        sourceLock.lock()
        do {
            try source.seek(to: offset)
        } catch {
            sourceLock.unlock()
            throw error
        }
        sourceLock.unlock()
        // A seek may move the stream off its end, or onto it.
        condition.lock()
        let s = sourceState
        if status == .atEnd, !s.isAtEnd {
            status = .open
            reportedEnd = false
            if s.hasBytesAvailable { enqueueLocked(.hasBytesAvailable) }
        } else if s.isAtEnd {
            endLocked()
        }
        condition.unlock()
    }

    /// The offset of the next byte: where reading will start before open, the source's
    /// `readOffset` after.
    func readOffset() -> Int64? {
        condition.lock()
        if status == .notOpen {
            let o = pendingOffset ?? 0
            condition.unlock()
            return o
        }
        condition.unlock()
        sourceLock.lock()
        defer { sourceLock.unlock() }
        return source.readOffset
    }

}
