import Foundation

// The stream's events: queued with `condition` locked, delivered on the scheduled run loops
// (a wake-up timer per loop, since `RunLoop.perform` does not wake a sleeping loop on
// Linux), once each, in order, to the delegate and the closure clients.
extension StreamCore {
    func enqueueLocked(_ event: Stream.Event) {
        // `pendingKinds` instead of `pending.contains(event)`: an unspecialized (debug) array
        // search allocates on every call, and this runs once per read.
        if pendingKinds & event.rawValue != 0 {
            armLocked()
            return
        }
        pendingKinds |= event.rawValue
        pending.append(event)
        armLocked()
    }

    /// Wakes every scheduled run loop (in each of its scheduled modes) by setting its
    /// waker's fire date to now: a timer wakes a sleeping run loop on Linux, `perform` does
    /// not. The first loop to fire delivers.
    func armLocked() {
        guard !pending.isEmpty, !armed, !schedules.isEmpty else { return }
        for entry in schedules where !wakers.contains(where: { $0.runLoop === entry.runLoop }) {
            addWakerLocked(for: entry.runLoop)
        }
        armed = true
        let now = Date()
        for waker in wakers { waker.timer.fireDate = now }
    }

    /// Between wake-ups a waker waits this long: a fire date that never comes, within what
    /// CoreFoundation accepts for an interval. A wake-up with nothing pending does nothing.
    static let wakerInterval: TimeInterval = 1_000_000

    /// Makes the waker for `runLoop` and adds it to each of the loop's scheduled modes.
    private func addWakerLocked(for runLoop: RunLoop) {
        let timer = Timer(
            fire: Date(timeIntervalSinceNow: Self.wakerInterval), interval: Self.wakerInterval, repeats: true
        ) { [weak self] _ in self?.deliver() }
        for entry in schedules where entry.runLoop === runLoop {
            runLoop.add(timer, forMode: entry.mode)
        }
        wakers.append((runLoop, timer))
        wakersMade += 1
    }

    /// Takes the wakers' timers out of their run loops while holding those loops. A loop
    /// whose thread has ended lives only as long as something holds it: invalidating a timer
    /// after its loop was freed reaches into freed memory, and a loop freed with a timer
    /// still in it frees that timer from whichever thread let it go.
    static func invalidate(_ wakers: [(runLoop: RunLoop, timer: Timer)]) {
        withExtendedLifetime(wakers.map(\.runLoop)) {
            for waker in wakers { waker.timer.invalidate() }
        }
    }

    func schedule(_ runLoop: RunLoop, _ mode: RunLoop.Mode) {
        condition.lock()
        defer { condition.unlock() }
        guard status != .closed,
            !schedules.contains(where: { $0.runLoop === runLoop && $0.mode == mode })
        else { return }
        schedules.append((runLoop, mode))
        if let waker = wakers.first(where: { $0.runLoop === runLoop }) {
            runLoop.add(waker.timer, forMode: mode)
        } else if armed {
            addWakerLocked(for: runLoop) // the loops armed so far may not be running
        }
        if armed { wakers.first(where: { $0.runLoop === runLoop })!.timer.fireDate = Date() }
        armLocked()
    }

    func unschedule(_ runLoop: RunLoop, _ mode: RunLoop.Mode) {
        condition.lock()
        defer { condition.unlock() }
        guard schedules.contains(where: { $0.runLoop === runLoop && $0.mode == mode }) else { return }
        schedules.removeAll { $0.runLoop === runLoop && $0.mode == mode }
        // A timer cannot leave one mode only: the loop's waker goes, and when the loop keeps
        // other modes a new one is made (now if a wake-up is due, else at the next one).
        if let index = wakers.firstIndex(where: { $0.runLoop === runLoop }) {
            Self.invalidate([wakers.remove(at: index)])
            if armed, schedules.contains(where: { $0.runLoop === runLoop }) {
                addWakerLocked(for: runLoop)
                wakers.last!.timer.fireDate = Date()
            }
        }
        if wakers.isEmpty { armed = false }
        armLocked()
    }

    /// Runs on a scheduled run loop: hands the pending events, in order, to the delegate and
    /// to the closure clients whose mask includes them. One delivery runs at a time: a timer
    /// that fires on another run loop meanwhile leaves the events to the running delivery,
    /// which takes them before it stops, so events never overtake each other.
    func deliver() {
        condition.lock()
        let current = RunLoop.current
        guard status != .closed, !delivering, schedules.contains(where: { $0.runLoop === current }) else {
            condition.unlock()
            return
        }
        delivering = true
        defer {
            condition.lock()
            delivering = false
            armed = false
            armLocked() // events that arrived as the last handler returned
            condition.unlock()
        }
        while true {
            var events = pending
            pending.removeAll(keepingCapacity: true)
            pendingKinds = 0
            condition.unlock()
            if events.isEmpty { return }
            while !events.isEmpty {
                let event = events.removeFirst()
                condition.lock()
                let stop = status == .closed
                let skip = event == .hasBytesAvailable && status != .open && status != .reading
                let stream = owner
                let delegate = self.delegate
                let clients = handlers.sorted { $0.key < $1.key }.map(\.value).filter { $0.mask.contains(event) }
                condition.unlock()
                guard !stop, let stream else { return }
                if skip { continue }
                delegate?.stream(stream, handle: event)
                for client in clients {
                    condition.lock()
                    let closed = status == .closed
                    condition.unlock()
                    if closed { return }
                    client.handler(stream, event)
                }
            }
            condition.lock()
        }
    }
}
