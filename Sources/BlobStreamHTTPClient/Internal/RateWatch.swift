import BlobStream
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
/// anew.
final class RateWatch: Sendable {
    private struct State {
        var received = 0
        /// (when, bytes received by then): the oldest one at or before the window's start.
        var samples: [(time: NIODeadline, received: Int)] = []
        var held = false
        var task: RepeatedTask?
        var onStall: (@Sendable (RangeStalled) -> Void)?
        var found: RangeStalled?
    }

    private let rate: HTTPMinimumRate
    private let state = Locked(State())

    init(rate: HTTPMinimumRate) {
        self.rate = rate
    }

    /// The stall found, if any.
    var stall: RangeStalled? { state.withLock { s in s.found } }

    /// Starts watching now (the request is sent) on `loop`; `onStall` runs once, on `loop`,
    /// when the bytes of a window fall short.
    func start(on loop: any EventLoop, onStall: @escaping @Sendable (RangeStalled) -> Void) {
        let nanoseconds = max(Int64(rate.seconds * 1e9 / 4), 5_000_000)
        let started = state.withLock { s -> Bool in
            guard s.onStall == nil, s.found == nil else { return false }
            s.onStall = onStall
            s.samples = [(.now(), s.received)]
            return true
        }
        guard started else { return }
        let task = loop.scheduleRepeatedTask(
            initialDelay: .nanoseconds(nanoseconds), delay: .nanoseconds(nanoseconds)
        ) { [weak self] _ in self?.tick() }
        let stopped = state.withLock { s -> Bool in
            s.task = task
            return s.onStall == nil
        }
        if stopped { task.cancel() }
    }

    /// `bytes` more of the body arrived.
    func add(_ bytes: Int) {
        state.withLock { s in s.received += bytes }
    }

    /// The reader makes the server wait: the clock stops.
    func hold() {
        state.withLock { s in s.held = true }
    }

    /// The reader takes bytes again: a new window starts now.
    func release() {
        state.withLock { s in
            guard s.held else { return }
            s.held = false
            s.samples = [(.now(), s.received)]
        }
    }

    /// Stops watching (the answer is complete, failed or cancelled).
    func stop() {
        let task = state.withLock { s -> RepeatedTask? in
            s.onStall = nil
            defer { s.task = nil }
            return s.task
        }
        task?.cancel()
    }

    private func tick() {
        let now = NIODeadline.now()
        let window = TimeAmount.nanoseconds(Int64(rate.seconds * 1e9))
        let report = state.withLock { s -> (@Sendable (RangeStalled) -> Void, RangeStalled)? in
            guard !s.held, let callback = s.onStall else { return nil }
            s.samples.append((now, s.received))
            let start = now - window
            while s.samples.count >= 2, s.samples[1].time <= start { s.samples.removeFirst() }
            guard let base = s.samples.first, base.time <= start else { return nil }
            let seconds = Double((now - base.time).nanoseconds) / 1e9
            let bytes = s.received - base.received
            guard Double(bytes) < Double(rate.bytesPerSecond) * seconds else { return nil }
            let stall = RangeStalled(received: bytes, seconds: rate.seconds, minimum: rate.bytesPerSecond)
            s.found = stall
            s.onStall = nil
            return (callback, stall)
        }
        guard let (callback, stall) = report else { return }
        state.withLock { s in s.task }?.cancel()
        callback(stall)
    }
}
