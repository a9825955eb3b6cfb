import Foundation
import NIOCore

/// A GET whose body came slower than its `HTTPMinimumRate`: `received` bytes within the last
/// `seconds` (the window), below `minimum` bytes a second. The GET was ended for it.
struct RangeStalled: Error, CustomStringConvertible {
    let received: Int
    let seconds: Double
    let minimum: Int

    var description: String {
        String(
            format: "%d bytes in the last %g s, below the minimum rate of %d bytes/s", received, seconds, minimum)
    }
}

/// Watches the body bytes of one answer against a minimum rate, on an event loop: every
/// quarter of the window it compares the bytes received within the last window (a sliding
/// one) with `bytesPerSecond × window`, and reports a stall once. Time while `hold()` is in
/// force (the reader makes the server wait) does not count: `release()` starts the window
/// anew. Unchecked Sendable: every mutable property is guarded by `lock`.
final class RateWatch: @unchecked Sendable {
    private let rate: HTTPMinimumRate
    private let lock = NSLock()
    private var received = 0
    /// (when, bytes received by then): the oldest one at or before the window's start.
    private var samples: [(time: NIODeadline, received: Int)] = []
    private var held = false
    private var task: RepeatedTask?
    private var onStall: (@Sendable (RangeStalled) -> Void)?
    private var found: RangeStalled?

    init(rate: HTTPMinimumRate) {
        self.rate = rate
    }

    /// The stall found, if any.
    var stall: RangeStalled? { lock.withLock { found } }

    /// Starts watching now (the request is sent) on `loop`; `onStall` runs once, on `loop`,
    /// when the bytes of a window fall short.
    func start(on loop: any EventLoop, onStall: @escaping @Sendable (RangeStalled) -> Void) {
        let nanoseconds = max(Int64(rate.seconds * 1e9 / 4), 5_000_000)
        let started = lock.withLock { () -> Bool in
            guard self.onStall == nil, found == nil else { return false }
            self.onStall = onStall
            samples = [(.now(), received)]
            return true
        }
        guard started else { return }
        let task = loop.scheduleRepeatedTask(
            initialDelay: .nanoseconds(nanoseconds), delay: .nanoseconds(nanoseconds)
        ) { [weak self] _ in self?.tick() }
        let stopped = lock.withLock { () -> Bool in
            self.task = task
            return self.onStall == nil
        }
        if stopped { task.cancel() }
    }

    /// `bytes` more of the body arrived.
    func add(_ bytes: Int) {
        lock.withLock { received += bytes }
    }

    /// The reader makes the server wait: the clock stops.
    func hold() {
        lock.withLock { held = true }
    }

    /// The reader takes bytes again: a new window starts now.
    func release() {
        lock.withLock {
            guard held else { return }
            held = false
            samples = [(.now(), received)]
        }
    }

    /// Stops watching (the answer is complete, failed or cancelled).
    func stop() {
        let task = lock.withLock { () -> RepeatedTask? in
            onStall = nil
            defer { self.task = nil }
            return self.task
        }
        task?.cancel()
    }

    private func tick() {
        let now = NIODeadline.now()
        let window = TimeAmount.nanoseconds(Int64(rate.seconds * 1e9))
        let report = lock.withLock { () -> (@Sendable (RangeStalled) -> Void, RangeStalled)? in
            guard !held, let callback = onStall else { return nil }
            samples.append((now, received))
            let start = now - window
            while samples.count >= 2, samples[1].time <= start { samples.removeFirst() }
            guard let base = samples.first, base.time <= start else { return nil }
            let seconds = Double((now - base.time).nanoseconds) / 1e9
            let bytes = received - base.received
            guard Double(bytes) < Double(rate.bytesPerSecond) * seconds else { return nil }
            let stall = RangeStalled(received: bytes, seconds: rate.seconds, minimum: rate.bytesPerSecond)
            found = stall
            onStall = nil
            return (callback, stall)
        }
        guard let (callback, stall) = report else { return }
        lock.withLock { task }?.cancel()
        callback(stall)
    }
}
