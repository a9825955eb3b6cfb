import AsyncHTTPClient
import BlobStream
import Foundation

// The blocks after the first answer: each a GET with If-Match, several in flight, taken in
// order; a block whose GET fails is asked again at its offset under the retry budget.
//
// After a jump (a seek away from the blocks asked for), reading starts small, as the
// kernel's read-ahead does: a block of an eighth of `options.blockSize` (1 MiB for 8 MiB) and
// one ahead of it, each next block twice as large, until blocks are `blockSize` with
// `readAhead` of them ahead. A random read of 1 MiB then moves about 3 MiB, not
// `blockSize × parallelism` (32 MiB); a long read reaches full speed after 15 MiB.
extension HTTPRangeDataSource {
    /// The first block after a jump: an eighth of the block size, at least 64 KiB.
    var jumpBlockSize: Int { max(64 << 10, options.blockSize / 8) }

    /// The size of the next block asked for: doubling after a jump, then `blockSize`; in a
    /// download (from the start, no jump, no hint), `downloadBlockSize` when set.
    private func nextSize() -> Int {
        guard let ramp = rampSize, ramp < options.blockSize else {
            rampSize = nil
            return isDownload ? options.downloadBlockSize ?? options.blockSize : options.blockSize
        }
        rampSize = min(ramp * 2, options.blockSize)
        return ramp
    }

    /// The block that holds `offset`: the first one read ahead when it starts there, else a
    /// fresh GET (the blocks read ahead are then dropped). A GET that fails for a reason the
    /// retry policy names is sent again for the same bytes after a wait; the bytes of a failed
    /// answer are never handed out. Starts the read-ahead of the blocks after it.
    func nextBlock(at offset: Int64, of object: RemoteObject) -> Result<RangeBlock, BlobStreamError> {
        // Only a strong ETag makes sure another request reads the same version.
        guard object.etag != nil else { return .failure(judge.needsSecondRequest(at: offset, of: object)) }
        readsAheadOfFirstBlock = false
        var fetch: RangeFetch
        if let first = aheads.first, first.range.contains(offset) {
            fetch = aheads.removeFirst()
        } else {
            for ahead in aheads {
                ahead.cancel()
                forget(ahead)
            }
            aheads = []
            if offset != lastBlockEnd { // a jump, not the next block
                rampSize = jumpBlockSize
                isDownload = false
            }
            let size = nextSize()
            fetch = RangeFetch(range: offset...min(offset + Int64(size), object.length) - 1)
            start(fetch, object: object)
        }
        let attempts = firstBlockAttempts
        firstBlockAttempts = 1
        let result = completed(fetch, of: object, attempts: attempts)
        if case .success(let block) = result {
            lastBlockEnd = block.end
            // A planned range's block: nothing ahead of it until a read goes past it.
            if block.end == plannedEnd {
                plannedEnd = nil
            } else {
                startAhead(after: block.end)
            }
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
                let wait = budget.wait(after: attempt, reason: reason)
            else { return .failure(budget.gaveUp(error, at: fetch.range.lowerBound, attempts: attempt)) }
            if let stopped = pause(for: wait) { return .failure(stopped) }
            attempt += 1
            fetch = RangeFetch(range: fetch.range)
            start(fetch, object: object)
        }
    }

    /// Asks for the blocks after `end` (after those already asked for) until
    /// `options.readAhead` are in flight (one while the blocks still grow after a jump) or
    /// the object's end is reached.
    func startAhead(after end: Int64) {
        guard let object else { return }
        var next = aheads.last.map { $0.range.upperBound + 1 } ?? end
        while next < object.length {
            let limit = rampSize == nil ? options.readAhead : min(1, options.readAhead)
            guard aheads.count < limit else { break }
            let size = nextSize()
            let fetch = RangeFetch(range: next...min(next + Int64(size), object.length) - 1)
            aheads.append(fetch)
            start(fetch, object: object)
            next = fetch.range.upperBound + 1
        }
    }

    /// Prepares and sends the GET of one block, with `If-Match`, to the object's location.
    func start(_ fetch: RangeFetch, object: RemoteObject) {
        guard let client else { return fetch.cancel() }
        let location = shared.lock.withLock { shared.location } ?? url
        switch requests.make(url: location, from: fetch.range.lowerBound, to: fetch.range.upperBound, etag: object.etag)
        {
        case .failure(let error):
            fetch.fail(error)
        case .success(let prepared):
            let stopped = shared.lock.withLock {
                shared.fetches[ObjectIdentifier(fetch)] = fetch
                return shared.isStopped
            }
            if stopped { return fetch.cancel() }
            fetch.start(
                prepared, client: client, deadline: nil, memory: blockMemory, on: blockLoop,
                minimumRate: options.minimumRate)
        }
    }

    /// Waits `wait` before an attempt again; `.closed` when `close()` or `interrupt()` ends
    /// the wait, `.wouldDeadlock` on an event loop of the client.
    func pause(for wait: Duration) -> BlobStreamError? {
        if let error = deadlockCheck() { return error }
        let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
        let until = Date(timeIntervalSinceNow: seconds)
        let stopped = shared.lock.withLock {
            while !shared.isStopped, shared.lock.wait(until: until) {}
            return shared.isStopped
        }
        return stopped ? BlobStreamError(.closed, "\(name): closed while a read waited to ask again") : nil
    }
}
