import BlobStream
import Foundation
import NIOCore
import NIOPosix

/// A ``FaultProxy``'s rules, their counts and its log, shared by its connections; a test
/// may wait on the log.
final class FaultProxyState: Sendable {
    private typealias Waiter = (
        condition: @Sendable ([FaultProxy.Seen], _ open: Int) -> Bool,
        resume: CheckedContinuation<[FaultProxy.Seen], Never>
    )

    private struct State {
        var rules: [(rule: FaultProxy.Rule, path: NSRegularExpression?)] = []
        var matches: [Int] = []
        /// When the outage each rule began ends (`Action.outage`), by rule index.
        var outageEnds: [Int: ContinuousClock.Instant] = [:]
        var log: [FaultProxy.Seen] = []
        /// Exchanges begun and not yet logged.
        var open = 0
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
    }
    private let state = Locked(State())

    /// Replaces the rules and their counts; throws when a `path` is not a regular expression.
    func setRules(_ rules: [FaultProxy.Rule]) throws {
        let compiled = try rules.map { rule in
            do {
                return (rule, try rule.path.map { try NSRegularExpression(pattern: $0) })
            } catch {
                throw SwiftStoreTestServer.Failure(
                    description: "fault proxy: the rule's path \(rule.path ?? "") is not a regular expression: \(error)"
                )
            }
        }
        state.withLock {
            $0.rules = compiled
            $0.matches = Array(repeating: 0, count: rules.count)
            $0.outageEnds = [:]
        }
    }

    /// The index and rule that act on this request, or nil; every rule it matches counts it.
    func choose(method: String, target: String) -> (index: Int, rule: FaultProxy.Rule)? {
        state.withLock { s in
            var chosen: (index: Int, rule: FaultProxy.Rule)?
            let now = ContinuousClock.now
            // An outage under way answers every request.
            for (index, end) in s.outageEnds.sorted(by: { $0.key < $1.key }) where now < end {
                chosen = (index, s.rules[index].rule)
                break
            }
            for (index, entry) in s.rules.enumerated() {
                if let wanted = entry.rule.method, wanted != method { continue }
                if let path = entry.path,
                    path.firstMatch(in: target, range: NSRange(target.startIndex..., in: target)) == nil
                {
                    continue
                }
                s.matches[index] += 1
                let count = s.matches[index]
                let (nth, times) = (entry.rule.nth, entry.rule.times)
                if case .outage(let seconds, _) = entry.rule.action {
                    if chosen == nil, count >= nth, s.outageEnds[index] == nil {
                        s.outageEnds[index] = now + .milliseconds(Int(seconds * 1000))
                        chosen = (index, entry.rule)
                    }
                    continue
                }
                if chosen == nil, count >= nth, times == 0 || count < nth + times { chosen = (index, entry.rule) }
            }
            return chosen
        }
    }

    /// Counts an exchange whose request has arrived (logged at its end by `record`).
    func began() { state.withLock { $0.open += 1 } }

    /// Logs `seen` and wakes the waiters whose condition now holds.
    func record(_ seen: FaultProxy.Seen) {
        let (woken, log) = state.withLock { s in
            s.log.append(seen)
            s.open -= 1
            let woken = s.waiters.filter { $0.value.condition(s.log, s.open) }
            for id in woken.keys { s.waiters.removeValue(forKey: id) }
            return (Array(woken.values), s.log)
        }
        for waiter in woken { waiter.resume.resume(returning: log) }
    }

    func entries() -> [FaultProxy.Seen] { state.withLock { $0.log } }

    func clear() { state.withLock { $0.log = [] } }

    /// The log once `condition` holds for it, or when `limit` has passed.
    func entries(
        waitingUpTo limit: Duration, until condition: @escaping @Sendable ([FaultProxy.Seen], _ open: Int) -> Bool
    ) async -> [FaultProxy.Seen] {
        await withCheckedContinuation { continuation in
            let (id, now): (Int, [FaultProxy.Seen]?) = state.withLock { s in
                if condition(s.log, s.open) { return (0, s.log) }
                s.nextWaiter += 1
                s.waiters[s.nextWaiter] = (condition, continuation)
                return (s.nextWaiter, nil)
            }
            if let now { return continuation.resume(returning: now) }
            // The bound: a timer on an event loop, not a task asleep.
            let (seconds, attoseconds) = limit.components
            let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
            MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .nanoseconds(nanoseconds)) {
                let expired = self.state.withLock { s in s.waiters.removeValue(forKey: id).map { ($0, s.log) } }
                if let expired { expired.0.resume.resume(returning: expired.1) }
            }
        }
    }
}
