import BlobStream
import Foundation

// GzipDataSource's state and announcements: what `state` says (copied from `desired` with no
// lock held), the sticky failure, the upstream's announcements, and inflating ahead over an
// asynchronous upstream. All with `lock` held, except `publish` and `upstreamChanged`.
extension GzipDataSource {
    /// Copies `desired` to `state` with `lock` released, so that observers run outside it
    /// (they may call back into this source). Announcements are serialized by
    /// `announceLock` (recursive: an observer may call back on the same thread), and each
    /// round copies the latest values, again while they changed meanwhile, so that when an
    /// owner's call returns, `state` says what the next call will find.
    func publish() {
        announceLock.lock()
        defer { announceLock.unlock() }
        while true {
            lock.lock()
            let d = desired
            let generation = desiredGeneration
            lock.unlock()
            if let error = d.error {
                state.error = error
            } else {
                if d.isOpenCompleted { state.isOpenCompleted = true }
                if d.isAtEnd {
                    state.isAtEnd = true
                } else {
                    state.isAtEnd = false
                    state.hasBytesAvailable = d.hasBytesAvailable
                }
            }
            lock.lock()
            let changed = desiredGeneration != generation
            lock.unlock()
            if !changed { return }
        }
    }

    /// Takes the decoding's error (or `error`) as the source's: sticky.
    func fail(_ error: BlobStreamError? = nil) {
        if let error { gzip.record(error) }
        if failure == nil { failure = gzip.failure }
        lookStart = 0
        lookEnd = 0
        desired.error = failure
    }

    /// Called on `probeQueue` after the upstream announced something.
    func upstreamChanged() {
        lock.lock()
        upstreamChangedLocked()
        lock.unlock()
        publish()
    }

    func upstreamChangedLocked() {
        guard started, !closed, failure == nil else { return }
        if !desired.isOpenCompleted {
            finishOpenIfReady()
        } else if lookCount == 0 && !desired.hasBytesAvailable && !desired.isAtEnd {
            refreshAvailability()
        }
    }

    func finishOpenIfReady() {
        guard !desired.isOpenCompleted, failure == nil, !closed else { return }
        if let error = upstream.error {
            fail(gzip.errors.upstream(error, "failed to open", at: gzip.compressedOffset))
        } else if upstream.isOpenCompleted {
            // An offset set before an asynchronous upstream finished opening: jump now.
            guard gzip.upstreamOpenedLate() else { return fail() }
            desired.isOpenCompleted = true
            // Inflate the first bytes now, whatever the upstream: an empty payload is at its
            // end right after open, and a stream that is not gzip at all fails at open.
            probe()
        }
    }

    /// Sets `hasBytesAvailable` / `isAtEnd` to what the next `read` will find. Over an
    /// asynchronous upstream this inflates ahead, so that `hasBytesAvailable` never promises
    /// bytes that depend on an upstream announcement still to come.
    func refreshAvailability() {
        guard failure == nil, !closed, desired.isOpenCompleted else { return }
        if lookCount > 0 {
            desired.hasBytesAvailable = true
        } else if gzip.isFinished {
            if gzip.target == gzip.produced {
                desired.isAtEnd = true
                desired.hasBytesAvailable = false
            } else {
                desired.hasBytesAvailable = true // the next read reports the offset past the end
            }
        } else if !buffered {
            desired.hasBytesAvailable = true // a synchronous upstream answers every read
        } else {
            probe()
        }
    }

    /// Inflates ahead into `lookahead` and announces what that found.
    func probe() {
        if lookahead == nil { lookahead = .allocate(capacity: Self.lookaheadCapacity) }
        switch gzip.decode(into: lookahead!, capacity: Self.lookaheadCapacity) {
        case .bytes(let n):
            lookStart = 0
            lookEnd = n
            desired.hasBytesAvailable = true
        case .end:
            desired.isAtEnd = true
            desired.hasBytesAvailable = false
        case .failed:
            fail()
        case .starved:
            desired.hasBytesAvailable = false // the upstream's next announcement probes again
        }
    }
}

/// What the upstream's observers reach: the gzip source, weakly (it owns the reader that
/// owns them).
final class WeakGzipSource: @unchecked Sendable {
    // Unchecked Sendable: `source` is set once, in the source's initializer, before the
    // upstream is opened.
    weak var source: GzipDataSource?
}
