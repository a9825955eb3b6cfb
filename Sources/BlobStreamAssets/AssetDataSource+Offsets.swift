import BlobStream
import Foundation
import Synchronization

// Offsets on AssetDataSource: where reading starts, and moves after open (`seek(to:)`,
// `readOffset`; the original's `.fileCurrentOffsetKey` reaches them through the default
// `property` / `setProperty`).

extension AssetDataSource {
    // MARK: - Offsets

    /// The offset of the next byte (before `open()`, where reading will start).
    public var readOffset: Int64? { position }

    /// Before `open()`, where reading starts (checked against the size when the lookup
    /// answers: past the end, the open fails with `.invalidOffset`); after, moves there.
    /// Outside the cache the cache is filled from there at once; an invalidation then drops
    /// `hasBytesAvailable` until the asset was looked up again, and a failed fill fails the
    /// source (the move itself was accepted).
    ///
    /// - Throws: `.invalidOffset` for a negative offset, one past the end (after `open()`:
    ///   `offset 900 is past the end of '<url>' (800 bytes)`), or after a failure (the
    ///   failure is the cause); `.closed` after `close()`. A refused move changes nothing.
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else {
            throw BlobStreamError(.invalidOffset, "cannot move '\(url)' to offset \(offset): an offset is 0 or more")
        }
        lock.lock()
        let announcement: Announcement
        switch phase {
        case .idle, .opening:
            position = offset // checked against the size when the lookup answers
            runStart = offset // nothing was handed out yet
            lock.unlock()
            return
        case .looking:
            guard offset <= size else {
                lock.unlock()
                throw AssetErrors.pastEnd(url: url, offset: offset, size: size)
            }
            move(to: offset) // the answer refills there
            lock.unlock()
            return
        case .failed, .closed:
            let closed = phase == .closed
            lock.unlock()
            throw AssetErrors.cannotMove(url: url, offset: offset, closed: closed, failure: state.error)
        case .ready:
            guard offset <= size else {
                lock.unlock()
                throw AssetErrors.pastEnd(url: url, offset: offset, size: size)
            }
            move(to: offset)
            if offset == size {
                announcement = endCheckedLocked()
            } else if offset >= cacheStart && offset < cacheEnd {
                announcement = .bytes
            } else {
                switch fillCache(at: offset) {
                case .filled:
                    announcement = .bytes
                case .invalidated:
                    phase = .looking
                    announcement = retryLocked()
                case .failed(let error):
                    phase = .failed
                    announcement = .error(error)
                }
            }
        }
        lock.unlock()
        if case .retry = announcement {
            state.isAtEnd = false
            state.hasBytesAvailable = false
        }
        announce(announcement)
    }
}
