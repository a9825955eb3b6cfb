import BlobStream
import Foundation
import NIOCore

extension HTTPRangeDataSource {
    /// What the event loops and `interrupt()` share with the owner. Unchecked Sendable:
    /// every mutable property is guarded by `lock`.
    final class Shared: @unchecked Sendable {
        /// Signalled when `opening` is set, and by `interrupt()`.
        let lock = NSCondition()
        var opening: Result<(RemoteObject, FirstAnswer), BlobStreamError>?
        var interrupted = false
        var fetches: [ObjectIdentifier: RangeFetch] = [:]
        /// The first GET (cancelled with the others).
        var stream: RangeStream?
        var length: Int64?
        /// Where the GETs go: the URL, or the last location a redirect of the first GET named.
        var location: URL?
        /// The first GET's next attempt, while it waits.
        var retry: Scheduled<Void>?
        /// The hedges of the first GET while it runs (`HTTPRangeDataSource+FirstHedge`).
        var firstHedges: [RangeFetch] = []
        /// Set by `close()` and a failure: no request is sent any more.
        var ended = false
        /// True once no request may be sent (interrupted, closed or failed).
        var isStopped: Bool { interrupted || ended }

        /// Keeps `fetch` to be cancelled with the others; true when no request may be sent
        /// any more (the caller then cancels it).
        func register(_ fetch: RangeFetch) -> Bool {
            lock.withLock {
                fetches[ObjectIdentifier(fetch)] = fetch
                return isStopped
            }
        }

        /// Drops `fetch` from those cancelled with the others (it is done with).
        func forget(_ fetch: RangeFetch) {
            _ = lock.withLock { fetches.removeValue(forKey: ObjectIdentifier(fetch)) }
        }

        /// The first answer's judgement, waited for (or the interrupt that ends the wait):
        /// `waited` false, with nothing, when it has not come and `onLoop` says the caller
        /// must not wait. `stream` is the first GET, when it still runs.
        func awaitOpening(onLoop: Bool) -> (
            waited: Bool, opening: Result<(RemoteObject, FirstAnswer), BlobStreamError>?, stream: RangeStream?
        ) {
            lock.withLock {
                if opening == nil, !interrupted, onLoop { return (false, nil, nil) }
                while opening == nil, !interrupted { lock.wait() }
                return (true, opening, stream)
            }
        }

        /// Ends every request (the GETs, the first GET, its next attempt): no request is sent
        /// any more, and a wait is woken.
        func stopAll() {
            let (fetches, stream, retry) = lock.withLock {
                defer {
                    self.fetches = [:]
                    self.stream = nil
                    self.retry = nil
                    ended = true
                    lock.broadcast()
                }
                return (Array(self.fetches.values), self.stream, self.retry)
            }
            for fetch in fetches { fetch.cancel() }
            stream?.cancel()
            retry?.cancel()
        }
    }
}
