import Foundation
import Synchronization

/// The state machine behind `BlobInputStream`, kept apart from the `InputStream` subclass so
/// that source announcements (any thread), run-loop timers and waiting readers can share it.
///
/// Unchecked Sendable: every `var` is read and written with `condition` locked, except
/// `source`, whose calls are serialized by `sourceLock` (contract rule 1).
final class StreamCore: @unchecked Sendable {
    let mode: BlobInputStream.Mode
    let source: any BlobDataSource
    /// `source.state`, kept: reading it through the existential costs a retain and a
    /// release on every read (slow ones, as the state is observed through weak references).
    let sourceState: BlobDataSourceState
    let condition = NSCondition()
    let sourceLock = NSLock()
    /// The source said it never lends (`BlobLending.never`): `getBuffer` no longer asks it.
    let sourceNeverLends = Atomic<Bool>(false)

    // Guarded by `condition`.
    var status: Stream.Status = .notOpen
    var error: BlobStreamError?
    var pendingOffset: Int64?
    var observations: [BlobObservation] = []
    weak var owner: BlobInputStream?
    weak var delegate: (any StreamDelegate)?
    var handlers: [Int: (mask: Stream.Event, handler: (BlobInputStream, Stream.Event) -> Void)] = [:]
    var nextHandlerID = 0
    var schedules: [(runLoop: RunLoop, mode: RunLoop.Mode)] = []
    var pending: [Stream.Event] = []
    /// The raw values of the events in `pending`, OR-ed together.
    var pendingKinds: UInt = 0
    /// One wake-up timer per scheduled run loop, added to each of that loop's scheduled
    /// modes, made when the first event is queued and kept until the stream is unscheduled
    /// from that loop or closed. Arming sets its fire date to now; between wake-ups it waits
    /// `wakerInterval` away. (Foundation on Linux never frees a `Timer`: one per event
    /// piled up megabytes; one per run loop and stream stays bounded.)
    var wakers: [(runLoop: RunLoop, timer: Timer)] = []
    /// A wake-up is set on the wakers and has not been delivered yet.
    var armed = false
    /// How many wakers this stream has made (the tests check it grows with run loops, not
    /// with events).
    var wakersMade = 0
    var reportedOpen = false, reportedEnd = false, reportedError = false
    var delivering = false

    init(source: any BlobDataSource, mode: BlobInputStream.Mode) {
        self.source = source
        self.sourceState = source.state
        self.mode = mode
        pending.reserveCapacity(4)
    }

    // MARK: - Open and close

    func open() {
        condition.lock()
        guard status == .notOpen else {
            condition.unlock()
            return
        } // twice is a no-op
        status = .opening
        let offset = pendingOffset
        condition.unlock()

        let source = self.source
        let tokens = [
            source.observe(.isOpenCompleted) { [weak self] _ in self?.sourceChanged(hasBytes: false) },
            source.observe(.hasBytesAvailable) { [weak self] change in
                self?.sourceChanged(hasBytes: change.newValue == true)
            },
            source.observe(.isAtEnd) { [weak self] _ in self?.sourceChanged(hasBytes: false) },
            source.observe(.error) { [weak self] _ in self?.sourceChanged(hasBytes: false) },
        ]
        condition.lock()
        observations = tokens
        let closed = status == .closed
        condition.unlock()
        if closed { return }

        sourceLock.lock()
        var refusal: BlobStreamError?
        if let offset {
            do { try source.seek(to: offset) } catch { refusal = error }
        }
        if refusal == nil { source.open() }
        sourceLock.unlock()
        if let refusal {
            fail(refusal)
            return
        }
        sourceChanged(hasBytes: source.hasBytesAvailable)

        if mode == .synchronous {
            condition.lock()
            defer { condition.unlock() }
            while status == .opening {
                if !waitLocked(for: "open") { break }
            }
        }
    }

    func close() {
        condition.lock()
        switch status {
        case .notOpen, .closed:
            condition.unlock()
            return
        default: break
        }
        status = .closed
        pending.removeAll(keepingCapacity: true)
        pendingKinds = 0
        let wakers = self.wakers
        self.wakers = []
        armed = false
        let schedules = self.schedules
        self.schedules = []
        let tokens = observations
        observations = []
        condition.broadcast()
        condition.unlock()

        withExtendedLifetime(schedules) { Self.invalidate(wakers) }
        for token in tokens { token.invalidate() }
        source.interrupt() // a read blocked in I/O holds `sourceLock`: end it first
        sourceLock.lock()
        source.close()
        sourceLock.unlock()
    }

    // MARK: - Reading

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard maxLength > 0 else { return 0 }
        while true {
            var announced = 0
            guard let ready = awaitReadable(announced: &announced) else { return -1 }
            if !ready { return 0 }
            sourceLock.lock()
            let n = source.read(buffer, maxLength: maxLength)
            sourceLock.unlock()

            if n > 0 {
                afterRead()
            } else if n == 0 {
                if nothingYet(announcedBefore: announced) {
                    // The source went quiet within the call (its next part opens later, an
                    // asset is looked up again). Wait for its announcement.
                    continue
                }
                reachedEnd()
            } else {
                let cause = sourceState.error
                fail(
                    cause.map { wrap($0) }
                        ?? BlobStreamError(.sourceFailed, "the data source returned -1 without setting an error"))
            }
            return n
        }
    }

    /// Lends the source's buffer when it has bytes to lend now: waits like `read` for
    /// bytes, then asks the source. False (nothing consumed) when the source lends none
    /// here, at the end, or after an error: `read` then tells which.
    func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>)
        -> Bool
    {
        if sourceNeverLends.load(ordering: .relaxed) { return false } // read takes it from here
        var announced = 0
        guard awaitReadable(announced: &announced) == true else { return false }
        sourceLock.lock()
        let lent = source.getBuffer(buffer, length: length)
        sourceLock.unlock()
        if lent && length.pointee > 0 {
            afterRead()
            return true
        }
        if !lent && BlobLending.saysNever(length.pointee) {
            sourceNeverLends.store(true, ordering: .relaxed)
            length.pointee = 0
        }
        condition.lock()
        if status == .reading { status = .open }
        condition.unlock()
        return false
    }

    /// Waits (in both modes) until the source has bytes, its end or its error to hand out,
    /// and marks the stream reading: true then; false at the end; nil when the stream
    /// failed, is closed or not open. `announced` is then the source state's `bytesAvailableTurns`.
    private func awaitReadable(announced: inout Int) -> Bool? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch status {
            case .atEnd:
                return false
            case .opening, .open, .reading:
                // Opening: the source is not open yet. Open: wait until it announces bytes,
                // its end or its error (rule 2: the source's read never waits itself).
                if status != .opening && !needsWait() {
                    if status == .open { status = .reading }
                    announced = sourceState.bytesAvailableTurns
                    return true
                }
                _ = waitLocked(for: "read") // on failure the status is .error: next turn returns nil
            default: // notOpen, closed, error
                return nil
            }
        }
    }

    /// True while neither bytes, end nor error have been announced: the read must wait.
    private func needsWait() -> Bool {
        let s = sourceState
        return !(s.hasBytesAvailable || s.isAtEnd || s.error != nil)
    }

    /// Waits for an announcement with `condition` locked. Returns false (after failing the
    /// stream) when waiting here could never end because this thread is where the source
    /// completes (contract rule 3).
    private func waitLocked(for operation: String) -> Bool {
        if source.completionContext.isCurrent {
            let err = BlobStreamError(
                .wouldDeadlock,
                "synchronous \(operation) would wait forever: it was called on the queue where the data source completes; call it from another thread or use asynchronous mode"
            )
            failLocked(err)
            return false
        }
        condition.wait()
        return true
    }

    /// After a read of 0: true when it was rule 2's "nothing yet" rather than the end — the
    /// source is not at its end, has no error, and dropped `hasBytesAvailable` within the
    /// read (it may have announced it again since: the count of announcements tells).
    private func nothingYet(announcedBefore: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let s = sourceState
        // The value first, then the count: a renewed `hasBytesAvailable` that can be seen has
        // its turn counted already, even when the stream's observer has not run yet.
        let hasBytes = s.hasBytesAvailable
        guard !s.isAtEnd && s.error == nil && (!hasBytes || s.bytesAvailableTurns != announcedBefore) else {
            return false
        }
        if status == .reading { status = .open }
        return true
    }

    private func afterRead() {
        condition.lock()
        let s = sourceState
        if s.isAtEnd {
            endLocked()
        } else if s.hasBytesAvailable, status == .reading || status == .open {
            enqueueLocked(.hasBytesAvailable)
        }
        if status == .reading { status = .open }
        condition.unlock()
    }

    private func reachedEnd() {
        condition.lock()
        endLocked()
        condition.unlock()
    }

    func endLocked() {
        guard status == .open || status == .reading || status == .opening else { return }
        status = .atEnd
        if !reportedEnd {
            reportedEnd = true
            enqueueLocked(.endEncountered)
        }
        condition.broadcast()
    }

    func wrap(_ cause: any Error) -> BlobStreamError {
        BlobStreamError(.sourceFailed, String(describing: cause), cause: cause)
    }

    func fail(_ error: BlobStreamError) {
        condition.lock()
        failLocked(error)
        condition.unlock()
    }

    func failLocked(_ err: BlobStreamError) {
        switch status {
        case .closed, .error, .notOpen: return
        default: break
        }
        status = .error
        error = err
        if !reportedError {
            reportedError = true
            enqueueLocked(.errorOccurred)
        }
        condition.broadcast()
    }

    // MARK: - Announcements from the source (any thread)

    /// Brings the stream's status in line with the source's after any announcement.
    func sourceChanged(hasBytes: Bool) {
        condition.lock()
        defer { condition.unlock() }
        switch status {
        case .opening, .open, .reading: break
        default: return
        }
        let s = sourceState.status
        if let cause = s.error {
            failLocked(wrap(cause))
            return
        }
        var justOpened = false
        if status == .opening, s.isOpenCompleted {
            status = .open
            justOpened = true
            if !reportedOpen {
                reportedOpen = true
                enqueueLocked(.openCompleted)
            }
        }
        if status != .opening {
            if s.isAtEnd {
                endLocked()
            } else if (hasBytes || justOpened) && s.hasBytesAvailable {
                enqueueLocked(.hasBytesAvailable)
            }
        }
        condition.broadcast()
    }
}
