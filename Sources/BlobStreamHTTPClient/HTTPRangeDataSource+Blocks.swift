import AsyncHTTPClient
import BlobStream
import Foundation

// The blocks after the first answer: each a GET with If-Match, several in flight, taken in
// order; a block whose GET fails is asked again at its offset under the retry budget. Their
// sizes and how many are read ahead: `RangePlan`.
extension HTTPRangeDataSource {
    /// The block that holds `offset`: the first one read ahead when it starts there, else a
    /// fresh GET (the blocks read ahead are then dropped). A GET that fails for a reason the
    /// retry policy names is sent again for the same bytes after a wait; the bytes of a failed
    /// answer are never handed out. Starts the read-ahead of the blocks after it.
    func nextBlock(at offset: Int64, of object: RemoteObject) -> Result<RangeBlock, BlobStreamError> {
        // Only a strong ETag makes sure another request reads the same version.
        guard object.etag != nil else { return .failure(judge.needsSecondRequest(at: offset, of: object)) }
        plan.readsAheadOfFirstBlock = false
        var fetch: RangeFetch
        if let first = aheads.first, first.range.contains(offset) {
            fetch = aheads.removeFirst()
        } else {
            for ahead in aheads {
                ahead.cancel()
                forget(ahead)
            }
            aheads = []
            plan.freshBlock(at: offset)
            let size = plan.nextSize()
            fetch = RangeFetch(range: offset...min(offset + Int64(size), object.length) - 1)
            sender.start(fetch, object: object)
        }
        let attempts = firstBlockAttempts
        firstBlockAttempts = 1
        let result = completed(fetch, of: object, attempts: attempts)
        // A planned range's block: nothing ahead of it until a read goes past it.
        if case .success(let block) = result, plan.readsAhead(afterBlockEndingAt: block.end) {
            startAhead(after: block.end)
        }
        return result
    }

    /// The block `fetch` brings, once it is complete; a GET that fails for a reason the
    /// retry policy names is sent again for the same bytes after the budget's wait, until it
    /// succeeds or the budget says no more (`attempts`: those already made, the one of
    /// `fetch` included).
    func completed(_ fetch: RangeFetch, of object: RemoteObject, attempts: Int = 1) -> Result<
        RangeBlock, BlobStreamError
    > {
        var (fetch, attempt) = (fetch, attempts)
        while true {
            if !fetch.isDone, let error = deadlockCheck() { return .failure(error) }
            let (answer, answered) = hedgedAnswer(of: fetch, object: object)
            forget(answered)
            let judged = judge.block(answer, range: fetch.range, of: object)
            guard case .failure(let error) = judged else {
                noteLongestSilence(of: answered)
                return judged
            }
            guard let reason = RetryBudget.reason(answer, judged: error),
                let wait = sender.budget.wait(after: attempt, reason: reason)
            else { return .failure(sender.budget.gaveUp(error, at: fetch.range.lowerBound, attempts: attempt)) }
            if let stopped = sender.pause(for: wait) { return .failure(stopped) }
            attempt += 1
            fetch = RangeFetch(range: fetch.range)
            sender.start(fetch, object: object)
        }
    }

    /// Asks for the blocks after `end` (after those already asked for) until
    /// `options.readAhead` are in flight (one while the blocks still grow after a jump) or
    /// the object's end is reached.
    func startAhead(after end: Int64) {
        guard let object else { return }
        var next = aheads.last.map { $0.range.upperBound + 1 } ?? end
        while next < object.length {
            guard aheads.count < plan.aheadLimit else { break }
            let size = plan.nextSize()
            let fetch = RangeFetch(range: next...min(next + Int64(size), object.length) - 1)
            aheads.append(fetch)
            sender.start(fetch, object: object)
            next = fetch.range.upperBound + 1
        }
    }
}
