import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore

// The hedges of the first GET (`HTTPHedging`): when the first answer has not come within the
// first GET's hedge delay, a GET of the first block (no `If-Match`: the ETag is not known yet)
// goes to the same location, and another after as long again (up to `maxHedges`); the first
// to answer opens the source, and the others are cancelled. The delay comes from what the
// process measured of the origin (`OriginTimings`): 4 × its recent GETs' time to an answer
// (100 ms at least), or, before any answer came, `firstDelay` (250 ms) or 3 × the time the
// first GET's connection took to be made, whichever is longer. A 206 with a strong ETag is taken as the first block; any other answer of the
// hedge (no strong ETag, a 200, a 416, an error) is dropped and the first GET decides.
extension HTTPRangeDataSource {
    /// Schedules the hedges of the first GET (bytes `offset` to `offset + held - 1`) on the
    /// blocks' event loop; `settle` opens the source with one (given with it) when it comes
    /// first.
    func hedgeFirstRequest(
        client: HTTPClient, offset: Int64, held: Int,
        settle: @escaping @Sendable (Result<(RemoteObject, FirstAnswer), BlobStreamError>, RangeFetch) -> Void
    ) {
        guard let hedging = options.hedging, hedging.maxHedges > 0, let loop = sender.blockLoop else { return }
        let (shared, requests, judge, memory) = (self.shared, sender.requests, answers.judge, sender.memory)
        let (minimumRate, timings) = (sender.minimumRate, sender.timings)
        let range = offset...offset + Int64(held) - 1
        // Checked again until the first answer comes: a hedge only while the GET and the
        // hedges sent so far are all silent (not while the GET waits to be sent again, nor
        // after a quick error), at most `maxHedges` of them. The delay is taken anew each
        // time: another source's answer from the same origin may have come meanwhile.
        @Sendable func check() {
            let (location, quiet, sent, connect) = shared.lock.withLock {
                () -> (URL?, TimeAmount, Int, TimeAmount?) in
                guard shared.opening == nil, !shared.isStopped else { return (nil, .zero, 0, nil) }
                var quiet = shared.stream?.clock.silence ?? .zero
                for hedge in shared.firstHedges where !hedge.isDone {
                    quiet = min(quiet, hedge.clock.silence ?? .zero)
                }
                return (shared.location, quiet, shared.firstHedges.count, shared.stream?.clock.connectWait)
            }
            guard let location, sent < hedging.maxHedges else { return }
            let delay = timings.delay(hedging, connect: connect)
            guard quiet >= delay else {
                loop.scheduleTask(in: delay - quiet) { check() }
                return
            }
            guard
                case .success(let request) = requests.make(
                    url: location, from: range.lowerBound, to: range.upperBound, etag: nil)
            else { return }
            let hedge = RangeFetch(range: range)
            let go = shared.lock.withLock { () -> Bool in
                guard shared.opening == nil, !shared.isStopped else { return false }
                shared.fetches[ObjectIdentifier(hedge)] = hedge
                shared.firstHedges.append(hedge)
                return true
            }
            guard go else { return }
            hedge.start(
                request, client: client, deadline: nil, memory: memory, on: loop, minimumRate: minimumRate,
                origin: timings
            ) { result in
                _ = shared.lock.withLock { shared.fetches.removeValue(forKey: ObjectIdentifier(hedge)) }
                guard let opened = Self.opening(from: result, range: range, judge: judge) else { return }
                settle(.success(opened), hedge)
            }
            loop.scheduleTask(in: delay) { check() }
        }
        // First looked at after the least delay there can be: by then an answer from the
        // origin to another source (an index beside the object) may have set it.
        loop.scheduleTask(in: TimeAmount(hedging.floor)) { check() }
    }

    /// The object and the first block a hedge's answer gives: a whole 206 of `range` (or of
    /// the object's rest) with a strong ETag; nil for anything else.
    private static func opening(
        from result: Result<RangeAnswer, RangeFetch.RangeFailure>, range: ClosedRange<Int64>, judge: RangeJudgement
    ) -> (RemoteObject, FirstAnswer)? {
        guard case .success(let answer) = result, answer.head.status.code == 206,
            case .success((let object, .streamed(let last))) = judge.opening(
                result, offset: range.lowerBound, blockSize: Int(range.count)),
            object.etag != nil, last == min(range.upperBound, object.length - 1),
            answer.body.count == Int(last - range.lowerBound + 1)
        else { return nil }
        return (object, .held(RangeBlock(start: range.lowerBound, bytes: answer.body)))
    }
}
