import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore

// Hedged ranges (`HTTPHedging`): a GET the reader waits for that stays silent far longer than
// the recent ranges ever did is asked for again (same bytes, `If-Match`), and the first answer
// that completes is kept. A node of a store that hangs then costs a fraction of a second,
// not the proxy's node timeout.
extension BlockPipeline {
    /// The answer to `fetch` once one is in, and the GET that brought it: `fetch`'s, or a
    /// hedge's when `fetch` stayed silent for the hedge delay (the first 2xx answer wins; the
    /// other GETs are cancelled). When every GET fails, `fetch`'s failure (the first one in).
    /// Every GET but the one returned is forgotten.
    mutating func hedgedAnswer(of fetch: RangeFetch, object: RemoteObject) -> (
        Result<RangeAnswer, RangeFetch.RangeFailure>, RangeFetch
    ) {
        guard let hedging = hedges.hedging, object.etag != nil, !fetch.isDone else { return (fetch.wait(), fetch) }
        let signal = FetchSignal()
        fetch.observe(signal)
        var racers = [fetch]
        var all = [fetch]
        var failed: (Result<RangeAnswer, RangeFetch.RangeFailure>, RangeFetch)?
        let delay = hedges.delay(hedging)
        let sender = self.sender
        func settle(_ result: Result<RangeAnswer, RangeFetch.RangeFailure>, _ winner: RangeFetch) -> (
            Result<RangeAnswer, RangeFetch.RangeFailure>, RangeFetch
        ) {
            for other in all where other !== winner {
                other.cancel()
                sender.forget(other)
            }
            return (result, winner)
        }
        while true {
            for racer in racers where racer.isDone {
                let result = racer.wait()
                if case .success(let answer) = result, (200..<300).contains(Int(answer.head.status.code)) {
                    return settle(result, racer)
                }
                racers.removeAll { $0 === racer }
                if failed == nil { failed = (result, racer) }
            }
            if racers.isEmpty, let failed { return settle(failed.0, failed.1) }
            let hedged = all.count - 1
            // A GET not sent yet (it waits for a connection of the pool) is not silent.
            let quiet = racers.map { $0.clock.silence ?? .zero }.min() ?? .zero
            if hedged < hedging.maxHedges, quiet >= delay, !sender.shared.lock.withLock({ sender.shared.isStopped }) {
                let hedge = RangeFetch(range: fetch.range)
                sender.start(hedge, object: object)
                hedge.observe(signal)
                racers.append(hedge)
                all.append(hedge)
                reaskSilentAheads(after: delay, object: object)
                continue
            }
            // At most a second at a time (the loop looks again): a far deadline such as
            // `distantFuture` trapped in NSCondition.wait(until:) on Linux (SIGILL).
            let seconds = hedged < hedging.maxHedges ? Double((delay - quiet).nanoseconds) / 1e9 : 1
            _ = signal.wait(until: Date(timeIntervalSinceNow: seconds.isFinite ? min(max(seconds, 0), 1) : 1))
        }
    }

    /// When a GET the reader waits for is hedged, the blocks read ahead that have been as
    /// silent as long are likely held by the same node: each is asked again now, its GET
    /// cancelled, rather than hedged one at a time as the reader reaches it.
    mutating func reaskSilentAheads(after delay: TimeAmount, object: RemoteObject) {
        for (index, ahead) in aheads.enumerated() where !ahead.isDone {
            guard let silence = ahead.clock.silence, silence >= delay else { continue }
            ahead.cancel()
            sender.forget(ahead)
            let fresh = RangeFetch(range: ahead.range)
            aheads[index] = fresh
            sender.start(fresh, object: object)
        }
    }
}

/// The hedge delay of one source: `max(multiple × the median of the recent ranges' longest
/// silences, floor)`, `firstDelay` before any range completed.
struct HedgeTiming {
    /// How many of the last ranges' longest silences the median is taken over.
    static let silencesKept = 16

    /// The source's hedging; nil: none.
    let hedging: HTTPHedging?
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
    /// range of this source completed, `firstDelay`.
    func delay(_ hedging: HTTPHedging) -> TimeAmount {
        guard !recentSilences.isEmpty else { return TimeAmount(max(hedging.firstDelay, hedging.floor)) }
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
