import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore

// Hedged ranges (`HTTPHedging`): a GET that stays silent far longer than the recent ranges
// ever did is asked for again (same bytes, `If-Match`), and the first answer that completes is
// kept. A node of a store that hangs then costs a fraction of a second, not the proxy's node
// timeout. The blocks read ahead are watched on the blocks' event loop, so that one held by a
// hung node is hedged while the reader is busy with the blocks before it; the GET the reader
// waits for is watched by the reader, and hedged sooner when a GET sent with it or after it
// has already heard its answer (see `hedgeDelay`). Each GET has at most `maxHedges` hedges.
extension BlockPipeline {
    /// The answer to `fetch` once one is in, and the GET that brought it: `fetch`'s, or a
    /// hedge's (`fetch.attachedHedges`, sent while `fetch` stayed silent for the hedge delay;
    /// the first 2xx answer wins; the other GETs are cancelled). When every GET fails, the
    /// first failure in. Every GET but the one returned is forgotten. A hedge asks for
    /// `hedgeRange` (nil: `fetch.range`), with `If-Match`.
    mutating func hedgedAnswer(
        of fetch: RangeFetch, object: RemoteObject, hedgeRange: ClosedRange<Int64>? = nil
    ) -> (Result<RangeAnswer, RangeFetch.RangeFailure>, RangeFetch) {
        guard let hedging = hedges.hedging, object.etag != nil else { return (fetch.wait(), fetch) }
        if fetch.isDone, fetch.attachedHedges.isEmpty { return (fetch.wait(), fetch) }
        let delay = hedges.delay(hedging)
        let signal = FetchSignal()
        var observed: Set<ObjectIdentifier> = []
        var failed: Set<ObjectIdentifier> = []
        var firstFailure: (Result<RangeAnswer, RangeFetch.RangeFailure>, RangeFetch)?
        let sender = self.sender
        func settle(_ result: Result<RangeAnswer, RangeFetch.RangeFailure>, _ winner: RangeFetch) -> (
            Result<RangeAnswer, RangeFetch.RangeFailure>, RangeFetch
        ) {
            for other in [fetch] + fetch.attachedHedges where other !== winner {
                other.cancel()
                sender.forget(other)
            }
            return (result, winner)
        }
        while true {
            let all = [fetch] + fetch.attachedHedges
            for racer in all where observed.insert(ObjectIdentifier(racer)).inserted {
                racer.observe(signal)
            }
            for racer in all where racer.isDone && !failed.contains(ObjectIdentifier(racer)) {
                let result = racer.wait()
                if case .success(let answer) = result, (200..<300).contains(Int(answer.head.status.code)) {
                    return settle(result, racer)
                }
                failed.insert(ObjectIdentifier(racer))
                if firstFailure == nil { firstFailure = (result, racer) }
            }
            let racers = all.filter { !failed.contains(ObjectIdentifier($0)) }
            if racers.isEmpty, let firstFailure { return settle(firstFailure.0, firstFailure.1) }
            let hedged = all.count - 1
            // A GET not sent yet (it waits for a connection of the pool) is not silent.
            let quiet = racers.map { $0.clock.silence ?? .zero }.min() ?? .zero
            let due = Self.hedgeDelay(of: fetch, after: delay, overtakenBy: aheads + all, hedging: hedging)
            if hedged < hedging.maxHedges, quiet >= due, !sender.shared.lock.withLock({ sender.shared.isStopped }) {
                let hedge = RangeFetch(range: hedgeRange ?? fetch.range)
                if fetch.attach(hedge, limit: hedging.maxHedges) { sender.start(hedge, object: object) }
                continue
            }
            // At most a second at a time (the loop looks again): a far deadline such as
            // `distantFuture` trapped in NSCondition.wait(until:) on Linux (SIGILL). A GET sent
            // with this one that hears its head meanwhile shortens the wait: looked at every
            // 50 ms.
            let next = hedged < hedging.maxHedges ? min(due - quiet, .milliseconds(50)) : .seconds(1)
            let seconds = Double(next.nanoseconds) / 1e9
            _ = signal.wait(until: Date(timeIntervalSinceNow: seconds.isFinite ? min(max(seconds, 0.005), 1) : 1))
        }
    }

    /// Watches `fetch`, a block read ahead, on the blocks' event loop: while it (and its
    /// hedges) stay silent for the hedge delay, a hedge is sent and attached to it, at most
    /// `maxHedges`, each after as long again; the reader races them when it reaches the block.
    /// A reader busy with the blocks before (writing them out, checking them) then does not
    /// hold back the hedge of a block that a hung node holds.
    func watch(_ fetch: RangeFetch, object: RemoteObject) {
        guard let hedging = hedges.hedging, hedging.maxHedges > 0, object.etag != nil, let loop = sender.blockLoop
        else { return }
        let (sender, delay) = (self.sender, hedges.delay(hedging))
        @Sendable func check() {
            guard !fetch.isDone else { return }
            let all = [fetch] + fetch.attachedHedges
            guard all.count - 1 < hedging.maxHedges else { return }
            let quiet = all.filter { !$0.isDone }.map { $0.clock.silence ?? .zero }.min() ?? .zero
            guard quiet >= delay else {
                loop.scheduleTask(in: delay - quiet) { check() }
                return
            }
            if sender.shared.lock.withLock({ sender.shared.isStopped }) { return }
            let hedge = RangeFetch(range: fetch.range)
            guard fetch.attach(hedge, limit: hedging.maxHedges) else { return }
            sender.start(hedge, object: object)
            loop.scheduleTask(in: delay) { check() }
        }
        loop.scheduleTask(in: delay) { check() }
    }

    /// The silence after which `fetch` is asked again: `delay`, or, once a GET among `others`
    /// sent with it or after it has heard its answer's head while `fetch` heard nothing,
    /// twice the time that GET took (at least `floor`, at most `delay`): a store that
    /// answered the later GET is not slow, and the node that holds `fetch` likely hangs ("a
    /// range that stalls while its siblings flow").
    static func hedgeDelay(
        of fetch: RangeFetch, after delay: TimeAmount, overtakenBy others: [RangeFetch], hedging: HTTPHedging
    ) -> TimeAmount {
        guard let sent = fetch.clock.sentTime, fetch.clock.timeToHead == nil else { return delay }
        var quickest: TimeAmount?
        // GETs sent together (the read-ahead after a block) go out in any order: one sent a
        // few milliseconds before counts as sent with it.
        let together = sent - .milliseconds(20)
        for other in others where other !== fetch {
            guard let otherSent = other.clock.sentTime, otherSent >= together, let head = other.clock.timeToHead else {
                continue
            }
            quickest = min(quickest ?? head, head)
        }
        guard let quickest else { return delay }
        return min(delay, max(TimeAmount(hedging.floor), .nanoseconds(quickest.nanoseconds * 2)))
    }
}

/// The hedge delay of one source: `max(multiple × the median of the recent ranges' longest
/// silences, floor)`; before any range completed, what the process measured of the origin
/// (`OriginTimings`), `firstDelay` when it measured nothing.
struct HedgeTiming {
    /// How many of the last ranges' longest silences the median is taken over.
    static let silencesKept = 16

    /// The source's hedging; nil: none.
    let hedging: HTTPHedging?
    /// What the process measured of the source's origin.
    let origin: OriginTimings
    /// The longest each of the last ranges went silent (time to first byte, or a pause in
    /// its body), in nanoseconds.
    var recentSilences: [Int64] = []

    /// Notes the longest a completed range went silent (its time to first byte, or a pause in
    /// its body), for the hedge delay.
    mutating func noteLongestSilence(of fetch: RangeFetch) {
        guard let silence = fetch.clock.longestSilence else { return }
        recentSilences.append(silence.nanoseconds)
        if recentSilences.count > Self.silencesKept { recentSilences.removeFirst() }
    }

    /// `max(multiple × the median of the recent ranges' longest silences, floor)`; before any
    /// range of this source completed, the origin's (`OriginTimings.delay`).
    func delay(_ hedging: HTTPHedging) -> TimeAmount {
        guard !recentSilences.isEmpty else { return origin.delay(hedging, connect: nil) }
        let median = recentSilences.sorted()[recentSilences.count / 2]
        return max(TimeAmount(hedging.floor), .nanoseconds(Int64(Double(median) * hedging.multiple)))
    }
}

extension TimeAmount {
    /// The same span in NIO's nanoseconds.
    init(_ duration: Duration) {
        let parts = duration.components
        self = .nanoseconds(parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000)
    }
}
