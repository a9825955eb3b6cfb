import Foundation

/// The package's one lock: a value reachable only while its lock is held, and the one way a
/// thread waits for another to change it.
///
/// `withLock` runs a closure with the value, as `Synchronization.Mutex` does;
/// `withLock(when:before:_:)` first waits, the lock released meanwhile, until the value is
/// ready (or a deadline passes). Every `withLock` that ends while a thread waits wakes it to
/// check its condition again, so no change is lost between a check and a wait, and no code
/// signals by hand.
///
/// Why not `Mutex`: ThreadSanitizer sees a `Mutex` handed from one thread to another only on
/// its uncontended path. Contended, `libswiftSynchronization` (not instrumented) hands it over
/// in the kernel, and TSan then reports every object made under the lock and used after it
/// (an HTTP client made on first use, read by a second thread) as a race, which `make tsan`
/// must fail on. `Locked` is a pthread mutex and condition (Foundation's `NSCondition`), which
/// TSan intercepts, at the same cost when uncontended.
package final class Locked<State>: @unchecked Sendable {
    // Unchecked Sendable: `state` and `waiting` are read and written only with `condition`
    // locked; a value taken out of `withLock` is the caller's to share safely (as with Mutex).
    private let condition = NSCondition()
    private var state: State
    private var waiting = 0

    /// A lock over `state`.
    package init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the value, the lock held; then wakes the threads that wait on it.
    package func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        condition.lock()
        defer {
            if waiting > 0 { condition.broadcast() }
            condition.unlock()
        }
        return try body(&state)
    }

    /// Waits until `ready(value)` holds or `deadline` passes, the lock released meanwhile;
    /// then runs `body` with the lock held, and `timedOut` true when `ready` still does not
    /// hold (the deadline passed).
    ///
    /// - Parameters:
    ///   - ready: checked with the lock held, first at once, then after each change.
    ///   - deadline: when to stop waiting; `nil` waits as long as it takes.
    package func withLock<Result, Failure: Error>(
        when ready: (State) -> Bool, before deadline: Date? = nil,
        _ body: (inout State, _ timedOut: Bool) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        condition.lock()
        defer {
            if waiting > 0 { condition.broadcast() }
            condition.unlock()
        }
        var timedOut = false
        while !ready(state) {
            waiting += 1
            if let deadline {
                timedOut = !condition.wait(until: deadline)
            } else {
                condition.wait()
            }
            waiting -= 1
            if timedOut {
                timedOut = !ready(state)
                break
            }
        }
        return try body(&state, timedOut)
    }

    /// Waits until `ready(value)` holds, the lock released meanwhile (no deadline).
    package func wait(until ready: (State) -> Bool) {
        withLock(when: ready) { _, _ in }
    }
}
