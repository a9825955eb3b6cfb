import BlobStream
import Foundation
import Synchronization

/// Wakes a thread waiting for an asynchronous upstream: observers of the upstream's state
/// call `poke()`; `cancel()` ends every wait for good.
final class UpstreamSignal: @unchecked Sendable {
    // Unchecked Sendable: `wakeup` is a lock (thread-safe by design), the flag is atomic.
    private let wakeup = NSCondition()
    private let cancelledFlag = Atomic<Bool>(false)

    var isCancelled: Bool { cancelledFlag.load(ordering: .acquiring) }

    /// Something changed upstream.
    func poke() {
        wakeup.lock()
        wakeup.broadcast()
        wakeup.unlock()
    }

    /// Ends every wait, now and later.
    func cancel() {
        cancelledFlag.store(true, ordering: .releasing)
        poke()
    }

    /// Waits until `ready()` is true or the signal is cancelled. `ready` is checked under
    /// the wakeup lock, so an announcement between the check and the wait is not lost.
    func wait(until ready: () -> Bool) {
        wakeup.lock()
        defer { wakeup.unlock() }
        while !ready() && !isCancelled {
            wakeup.wait()
        }
    }

    /// Observes the four values of `upstream`; hold the tokens as long as waits may happen.
    func observe(_ upstream: any BlobDataSource) -> [BlobObservation] {
        [
            upstream.observe(\.isOpenCompleted) { [self] _ in poke() },
            upstream.observe(\.hasBytesAvailable) { [self] _ in poke() },
            upstream.observe(\.isAtEnd) { [self] _ in poke() },
            upstream.observe(\.error) { [self] _ in poke() },
        ]
    }
}
