import Foundation
import Synchronization

/// Wakes the owner of a `BlobUpstreamReader` that waits for an asynchronous upstream, and calls
/// its `onChange`: observers of the upstream call `poke()`; `cancel()` ends every wait.
final class UpstreamWaiter: @unchecked Sendable {
    // Unchecked Sendable: `condition` is a lock, the flag is atomic, `onChange` immutable.
    private let condition = NSCondition()
    private let cancelled = Atomic<Bool>(false)
    private let onChange: (@Sendable () -> Void)?

    init(onChange: (@Sendable () -> Void)?) { self.onChange = onChange }

    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Something changed upstream: tells `onChange`, then wakes the waits.
    func poke() {
        onChange?()
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Ends every wait, now and later.
    func cancel() {
        cancelled.store(true, ordering: .releasing)
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `ready()` or cancellation; `ready` is checked with the lock held, so an
    /// announcement between the check and the wait is not lost.
    func wait(until ready: () -> Bool) {
        condition.lock()
        defer { condition.unlock() }
        while !ready() && !isCancelled {
            condition.wait()
        }
    }

    /// Observes the four values of `upstream`.
    func observe(_ upstream: any BlobDataSource) -> [BlobObservation] {
        [
            upstream.observe(.isOpenCompleted) { [self] _ in poke() },
            upstream.observe(.hasBytesAvailable) { [self] _ in poke() },
            upstream.observe(.isAtEnd) { [self] _ in poke() },
            upstream.observe(.error) { [self] _ in poke() },
        ]
    }
}
