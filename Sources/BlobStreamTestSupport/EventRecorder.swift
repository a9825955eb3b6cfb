import BlobStream
import Foundation

/// A `StreamDelegate` that records the events it is handed, in order, with the thread they
/// arrived on; an optional reaction runs for each (read on `.hasBytesAvailable`, close on
/// `.endEncountered`, …). Thread-safe to inspect from the test's thread.
public final class EventRecorder: NSObject, StreamDelegate, @unchecked Sendable {
    // Unchecked Sendable: every mutable field is guarded by `lock`.
    private let lock = NSCondition()
    private var _events: [Stream.Event] = []
    private var _threads: [Thread] = []
    private let reaction: ((Stream, Stream.Event) -> Void)?

    /// Makes a recorder; `reaction` runs after each event is recorded.
    public init(reaction: ((Stream, Stream.Event) -> Void)? = nil) {
        self.reaction = reaction
    }

    /// The events so far, in the order delivered.
    public var events: [Stream.Event] { lock.withLock { _events } }

    /// The threads the events arrived on, one per event.
    public var threads: [Thread] { lock.withLock { _threads } }

    /// The events as short names (`open`, `bytes`, `end`, `error`), for readable assertions.
    public var names: [String] { events.map(Self.name) }

    /// A short name for an event.
    public static func name(_ event: Stream.Event) -> String {
        switch event {
        case .openCompleted: "open"
        case .hasBytesAvailable: "bytes"
        case .endEncountered: "end"
        case .errorOccurred: "error"
        case .hasSpaceAvailable: "space"
        default: "event(\(event.rawValue))"
        }
    }

    /// Records `eventCode` (the `StreamDelegate` callback); called by the stream on its run loop.
    public func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        lock.withLock {
            _events.append(eventCode)
            _threads.append(Thread.current)
            lock.broadcast()
        }
        reaction?(aStream, eventCode)
    }

    /// Records an event from a closure client (`BlobInputStream.addEventHandler`).
    public func record(_ stream: Stream, _ event: Stream.Event) { self.stream(stream, handle: event) }

    /// Waits until `predicate` holds for the events or `timeout` passes; returns whether it
    /// held. Use it from a thread that is not the one delivering events.
    public func wait(timeout: TimeInterval, until predicate: ([Stream.Event]) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        defer { lock.unlock() }
        while !predicate(_events) {
            if !lock.wait(until: deadline) { return predicate(_events) }
        }
        return true
    }
}

extension BlobInputStream {
    /// Runs the current thread's run loop in `mode` until `done()` is true or `timeout`
    /// passes; returns whether `done()` became true. Schedule the stream on this run loop
    /// first.
    public static func runCurrentRunLoop(
        mode: RunLoop.Mode = .default, timeout: TimeInterval, until done: () -> Bool
    ) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !done() {
            if Date() >= deadline { return false }
            // A mode with nothing in it (no stream has queued an event yet) returns at once:
            // wait a little rather than spin. (No keep-alive timer: Foundation on Linux never
            // frees a `Timer`.)
            if !RunLoop.current.run(mode: mode, before: min(deadline, Date(timeIntervalSinceNow: 0.05))) {
                Thread.sleep(forTimeInterval: 0.001)
            }
        }
        return true
    }
}
