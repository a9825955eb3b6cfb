import BlobStream
import Foundation
import Synchronization

// `.fileCurrentOffsetKey` on AssetDataSource: where reading starts, and moves after open.

extension AssetDataSource {
    // MARK: - Properties

    /// `.fileCurrentOffsetKey`: an `NSNumber` of the offset of the next byte.
    public func property(forKey key: Stream.PropertyKey) -> Any? {
        key == .fileCurrentOffsetKey ? NSNumber(value: position) : nil
    }

    /// `.fileCurrentOffsetKey`: before `open()`, where reading starts; after, moves there
    /// (refused past the end, after an error or close). Outside the cache the cache is filled
    /// from there at once; an invalidation then drops `hasBytesAvailable` until the asset
    /// was looked up again.
    public func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let offset = BlobOffset.value(from: property) else { return false }
        lock.lock()
        let announcement: Announcement
        switch phase {
        case .idle, .opening:
            position = offset // checked against the size when the lookup answers
            runStart = offset // nothing was handed out yet
            lock.unlock()
            return true
        case .looking:
            guard offset <= size else {
                lock.unlock()
                return false
            }
            move(to: offset) // the answer refills there
            lock.unlock()
            return true
        case .failed, .closed:
            lock.unlock()
            return false
        case .ready:
            guard offset <= size else {
                lock.unlock()
                return false
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
        return true
    }

    /// With `lock` held, after open: moves the cursor; what was handed out before stays to
}
