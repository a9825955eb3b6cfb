import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore

// The hedges of the first GET (`HTTPHedging`): when the first answer has not come within the
// hedge's first delay, a GET of the first block (no `If-Match`: the ETag is not known yet) goes to
// the same location, and another after as long again (up to `maxHedges`); the first to
// answer opens the source, and the others are cancelled. A 206 with a strong ETag is taken as the first block; any other answer of the
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
        let minimumRate = sender.minimumRate
        let delay = TimeAmount(hedging.firstDelay)
        let range = offset...offset + Int64(held) - 1
        // Checked again until the first answer comes: a hedge only while the GET and the
        // hedges sent so far are all silent (not while the GET waits to be sent again, nor
        // after a quick error), at most `maxHedges` of them.
        @Sendable func check() {
            let (location, quiet, sent) = shared.lock.withLock { () -> (URL?, TimeAmount, Int) in
                guard shared.opening == nil, !shared.isStopped else { return (nil, .zero, 0) }
                var quiet = shared.stream?.clock.silence ?? .zero
                for hedge in shared.firstHedges where !hedge.isDone {
                    quiet = min(quiet, hedge.clock.silence ?? .zero)
                }
                return (shared.location, quiet, shared.firstHedges.count)
            }
            guard let location, sent < hedging.maxHedges else { return }
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
                request, client: client, deadline: nil, memory: memory, on: loop, minimumRate: minimumRate
            ) { result in
                _ = shared.lock.withLock { shared.fetches.removeValue(forKey: ObjectIdentifier(hedge)) }
                guard let opened = Self.opening(from: result, range: range, judge: judge) else { return }
                settle(.success(opened), hedge)
            }
            loop.scheduleTask(in: delay) { check() }
        }
        loop.scheduleTask(in: delay) { check() }
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
