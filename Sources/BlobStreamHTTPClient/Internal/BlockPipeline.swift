import BlobStream
import Foundation

/// The blocks of an `HTTPRangeDataSource` after its first answer: each a GET with `If-Match`,
/// several in flight, handed out in order; a block whose GET fails is asked again at its
/// offset under the retry budget, and one that stays silent is hedged
/// (`BlockPipeline+Hedging`). Which blocks, and how large: `RangePlan`. Owned by the reading
/// thread.
struct BlockPipeline {
    let sender: RangeSender
    let judge: RangeJudgement
    /// The block handed out last (the first answer's before the first read): what
    /// `getBuffer` lent stays valid until the next call.
    var current: RangeBlock?
    /// The GETs of the blocks after the current one, in order, contiguous.
    var aheads: [RangeFetch] = []
    /// The attempts already made of the block at the offset of the first answer, when its
    /// body was cut before the first block was whole (that block is then asked again).
    var firstBlockAttempts = 1
    /// The object's end, asked for at open (`expectEnd(_:)`).
    var end = EndRange()
    /// The hedge delay, from how long the recent ranges went silent.
    var hedges: HedgeTiming

    init(sender: RangeSender, judge: RangeJudgement, hedging: HTTPHedging?) {
        self.sender = sender
        self.judge = judge
        self.hedges = HedgeTiming(hedging: hedging, origin: sender.timings)
    }

    /// The block that holds `position`: the current one, else the next one asked for and
    /// waited for (`nextBlock(at:of:plan:)`); the first read of the first block starts the
    /// read-ahead after it.
    mutating func block(at position: Int64, of object: RemoteObject, plan: inout RangePlan) -> Result<
        RangeBlock, BlobStreamError
    > {
        if current.map({ !($0.start...$0.end - 1).contains(position) }) ?? true {
            // The block read before is done with (what `getBuffer` lent it is valid until this
            // call): its memory goes back before the next block and those read ahead of it
            // take theirs, so a long read holds `parallelism` blocks, not one more.
            current = nil
            switch nextBlock(at: position, of: object, plan: &plan) {
            case .success(let block): current = block
            case .failure(let error): return .failure(error)
            }
        }
        let block = current!
        if plan.startsReadAhead(atFirstBlockEndingAt: block.end) {
            startAhead(after: block.end, of: object, plan: &plan)
        }
        return .success(block)
    }

    /// The block that holds `offset`: the first one read ahead when it starts there, else a
    /// fresh GET (the blocks read ahead are then dropped). A GET that fails for a reason the
    /// retry policy names is sent again for the same bytes after a wait; the bytes of a failed
    /// answer are never handed out. Starts the read-ahead of the blocks after it.
    mutating func nextBlock(at offset: Int64, of object: RemoteObject, plan: inout RangePlan) -> Result<
        RangeBlock, BlobStreamError
    > {
        // Only a strong ETag makes sure another request reads the same version.
        guard object.etag != nil else { return .failure(judge.needsSecondRequest(at: offset, of: object)) }
        plan.readsAheadOfFirstBlock = false
        var fetch: RangeFetch
        if let first = aheads.first, first.range.contains(offset) {
            fetch = aheads.removeFirst()
        } else {
            dropAheads()
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
            startAhead(after: block.end, of: object, plan: &plan)
        }
        return result
    }

    /// The block `fetch` brings, once it is complete; a GET that fails for a reason the
    /// retry policy names is sent again for the same bytes after the budget's wait, until it
    /// succeeds or the budget says no more (`attempts`: those already made, the one of
    /// `fetch` included).
    mutating func completed(_ fetch: RangeFetch, of object: RemoteObject, attempts: Int = 1) -> Result<
        RangeBlock, BlobStreamError
    > {
        var (fetch, attempt) = (fetch, attempts)
        while true {
            if !fetch.isDone, let error = sender.deadlockCheck() { return .failure(error) }
            let (answer, answered) = hedgedAnswer(of: fetch, object: object)
            sender.forget(answered)
            let judged = judge.block(answer, range: fetch.range, of: object)
            guard case .failure(let error) = judged else {
                hedges.noteLongestSilence(of: answered)
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
    /// `plan.aheadLimit` are in flight or the object's end is reached.
    mutating func startAhead(after end: Int64, of object: RemoteObject, plan: inout RangePlan) {
        var next = aheads.last.map { $0.range.upperBound + 1 } ?? end
        while next < object.length {
            guard aheads.count < plan.aheadLimit else { break }
            let size = plan.nextSize()
            let fetch = RangeFetch(range: next...min(next + Int64(size), object.length) - 1)
            aheads.append(fetch)
            sender.start(fetch, object: object)
            watch(fetch, object: object)
            next = fetch.range.upperBound + 1
        }
    }

    /// Cancels the GETs read ahead (and their hedges).
    mutating func dropAheads() {
        for ahead in aheads {
            ahead.cancel()
            for fetch in [ahead] + ahead.attachedHedges { sender.forget(fetch) }
        }
        aheads = []
    }

    /// Asks for the bytes `range` now, by one GET that becomes the only one ahead, unless the
    /// first one ahead already starts there and holds them; false when nothing was asked.
    mutating func ask(_ range: ClosedRange<Int64>, of object: RemoteObject) -> Bool {
        if let first = aheads.first, first.range.lowerBound == range.lowerBound,
            range.upperBound <= first.range.upperBound
        {
            return false
        }
        dropAheads()
        let fetch = RangeFetch(range: range)
        aheads = [fetch]
        sender.start(fetch, object: object)
        watch(fetch, object: object)
        return true
    }

    /// The GETs read ahead that bring one of `ranges` whole (a planned read: its answer, no
    /// other request).
    func aheads(bringing ranges: [Range<Int64>]) -> [RangeFetch] {
        aheads.filter { fetch in
            ranges.contains { fetch.range.lowerBound <= $0.lowerBound && $0.upperBound <= fetch.range.upperBound + 1 }
        }
    }

    /// The block of the object's end asked for at open, when `range` lies in it: its answer
    /// is waited for, hedged as a block's is when its GET stays silent (a GET of the same
    /// bytes with `If-Match`), and kept when it holds exactly those bytes of the object the
    /// first answer described (`EndRange`).
    mutating func endBlock(covering range: Range<Int64>, of object: RemoteObject) -> RangeBlock? {
        if let (fetch, expected) = end.pending(covering: range, of: object, sender: sender) {
            let (answer, answered) = hedgedAnswer(of: fetch, object: object, hedgeRange: expected)
            sender.forget(answered)
            end.settle(answer, expected: expected, of: object, judge: judge)
        }
        return end.block(covering: range)
    }

    /// Lets the blocks go (`close()`; their GETs are cancelled with the others).
    mutating func close() {
        current = nil
        aheads = []
    }
}
