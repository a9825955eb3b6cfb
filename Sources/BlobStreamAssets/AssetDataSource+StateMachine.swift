import BlobStream
import Foundation
import Synchronization

// The state machine of AssetDataSource: the phases idle → opening → ready ⇄ looking →
// failed / closed, the lookups and their answers, and the announcements made outside the
// lock. See the type's documentation, "Reading across an invalidation".

extension AssetDataSource {
    // MARK: - Open

    /// Starts the lookup; completes on the library's callback queue.
    public func open() {
        let go = lock.withLock { () -> Bool in
            guard phase == .idle else { return false }
            phase = .opening
            return true
        }
        if go { startLookup() }
    }

    func startLookup() {
        lookupCount.add(1, ordering: .relaxed)
        let start: @Sendable () -> Void = {
            self.library.asset(for: self.url) { result in self.lookupFinished(result) }
        }
        if let openQueue { openQueue.async(execute: start) } else { start() }
    }

    /// What to announce once the lock is released.
    enum Announcement {
        case none, opened, openedAtEnd, bytes, atEnd, retry
        case error(BlobStreamError)
    }

    /// The library's answer, on its callback queue.
    func lookupFinished(_ result: Result<Asset, any Error>) {
        lock.lock()
        let announcement: Announcement
        switch (phase, result) {
        case (.opening, .failure(let error)):
            phase = .failed
            announcement = .error(AssetErrors.naming(error, url: url, context: "cannot open"))
        case (.looking, .failure(let error)):
            phase = .failed
            if let e = error as? BlobStreamError, e.code == .notFound {
                announcement = .error(
                    AssetErrors.changed(
                        url: url, "it is no longer in its library", position: position, size: size, cause: e))
            } else {
                announcement = .error(
                    AssetErrors.naming(
                        error, url: url,
                        context: "cannot look up again after its library changed (at offset \(position))"))
            }
        case (.opening, .success(let asset)):
            announcement = opening(asset.representation(renditionChoice))
        case (.looking, .success(let asset)):
            announcement = resuming(asset)
        default: // closed meanwhile
            announcement = .none
        }
        lock.unlock()
        announce(announcement)
    }

    /// With `lock` held: takes the representation found at open, fills the cache.
    func opening(_ rep: any AssetRepresentation) -> Announcement {
        if position > rep.size {
            phase = .failed
            return .error(
                AssetErrors.pastEnd(url: url, offset: position, size: rep.size))
        }
        representation = rep
        size = rep.size
        fingerprint = rep.fingerprint
        if cache == nil {
            cache = .allocate(byteCount: Int(min(Int64(cacheSize), max(rep.size, 1))), alignment: 64)
        }
        if position == size {
            opened = (rep.rendition, rep.filename, rep.uti)
            phase = .ready
            return .openedAtEnd
        }
        switch fillCache(at: position) {
        case .filled:
            opened = (rep.rendition, rep.filename, rep.uti)
            phase = .ready
            attempts = 0
            return .opened
        case .invalidated:
            return retryLocked()
        case .failed(let error):
            phase = .failed
            return .error(error)
        }
    }

    /// With `lock` held: checks that the asset found again is the one being read (same
    /// rendition and size, and the bytes handed out so far are its bytes), and refills the
    /// cache at the current position from it.
    func resuming(_ asset: Asset) -> Announcement {
        guard let opened else { return .none }
        let found = opened.rendition == .edited ? asset.edited : asset.original
        guard let rep = found else {
            phase = .failed
            return .error(
                AssetErrors.changed(url: url, "its edited rendition was removed", position: position, size: size))
        }
        if rep.size != size {
            phase = .failed
            return .error(
                AssetErrors.changed(url: url, "its size is now \(rep.size) bytes", position: position, size: size))
        }
        if !verifiesDeliveredBytes && rep.fingerprint != fingerprint {
            phase = .failed
            return .error(
                AssetErrors.changed(
                    url: url, "its bytes are different (fingerprint \(fingerprint) is now \(rep.fingerprint))",
                    position: position, size: size))
        }
        representation = rep
        switch verifiesDeliveredBytes ? recheckDelivered() : .same {
        case .same:
            break
        case .different(let run):
            phase = .failed
            return .error(
                AssetErrors.changed(
                    url: url,
                    "the bytes already read from offset \(run.start) to \(run.end) are not those of its current version of the same size",
                    position: position, size: size))
        case .invalidated:
            return retryLocked()
        case .failed(let error):
            phase = .failed
            return .error(error)
        case .closed:
            return .none
        }
        if position == size {
            phase = .ready
            return endCheckedLocked()
        }
        switch fillCache(at: position) {
        case .filled:
            phase = .ready
            attempts = 0
            return .bytes
        case .invalidated:
            return retryLocked()
        case .failed(let error):
            phase = .failed
            return .error(error)
        }
    }

    /// With `lock` held: one more lookup after an invalidation, unless there were too many.
    func retryLocked() -> Announcement {
        attempts += 1
        if attempts > Self.maxAttempts {
            phase = .failed
            return .error(
                AssetErrors.keptInvalidating(url: url, attempts: Self.maxAttempts, offset: position))
        }
        return .retry
    }

    /// With `lock` held, in phase `.ready` at the end: `.atEnd` when the representation read
    /// from is still valid; otherwise one more lookup, whose answer checks what was handed
    /// out as on resume (the end is announced only then), or the error.
    func endCheckedLocked() -> Announcement {
        do {
            try representation?.checkValid()
            return .atEnd
        } catch let error as BlobStreamError where error.code == .invalidated {
            invalidationCount.add(1, ordering: .relaxed)
            phase = .looking
            return retryLocked()
        } catch {
            phase = .failed
            return .error(
                AssetErrors.naming(error, url: url, context: "cannot check at the end (offset \(position)) of"))
        }
    }

    /// At the end, in a read: announces it once the representation was found still valid
    /// (see `endCheckedLocked`).
    func endOfRead() {
        let announcement = lock.withLock { () -> Announcement in
            guard phase == .ready else { return .none }
            return endCheckedLocked()
        }
        if case .retry = announcement { state.hasBytesAvailable = false }
        announce(announcement)
    }

    /// Makes state changes outside the lock (observers may call back).
    func announce(_ announcement: Announcement) {
        switch announcement {
        case .none:
            break
        case .opened:
            // In this order: the stream announces hasBytesAvailable only once open.
            state.isOpenCompleted = true
            state.hasBytesAvailable = true
        case .openedAtEnd:
            // The end first: a synchronous open returns as soon as it sees the open
            // completed, and must find the end already there.
            state.isAtEnd = true
            state.isOpenCompleted = true
        case .bytes:
            state.isAtEnd = false
            state.hasBytesAvailable = true
        case .atEnd:
            state.isAtEnd = true
        case .retry:
            startLookup()
        case .error(let error):
            state.error = error
        }
    }

    /// Drops `hasBytesAvailable` and looks the asset up again (a getBytes was invalidated).
    func beginLookingAgain() {
        let announcement = lock.withLock { () -> Announcement in
            guard phase == .ready else { return .none }
            phase = .looking
            return retryLocked()
        }
        if case .retry = announcement { state.hasBytesAvailable = false }
        announce(announcement)
    }

    /// its next block); later reads return −1.
    public func close() {
        closing.store(true, ordering: .relaxed)
        lock.withLock {
            phase = .closed
            representation = nil
        }
        state.hasBytesAvailable = false
    }
}
