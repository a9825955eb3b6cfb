import AsyncHTTPClient
import BlobStream
import Foundation

// The first answer of an `HTTPRangeDataSource`: judged, then taken as the bytes it held, as
// the first block (with a strong ETag), or read as it arrives (without one).
extension HTTPRangeDataSource {
    /// `.blobOffsetLimitKey`: once the first answer came without a strong ETag, why a move
    /// back fails (the URL, what the server sent); `.fileCurrentOffsetKey`: `readOffset`.
    public func property(forKey key: Stream.PropertyKey) -> Any? {
        guard key == .blobOffsetLimitKey else { return offsetProperty(forKey: key) }
        return shared.lock.withLock { () -> String? in
            guard case .success(let (object, .streamed))? = shared.opening, object.etag == nil else { return nil }
            return answers.judge.noStrongETag(object)
        }
    }

    /// Waits for the first answer's judgement and takes what it brought: the bytes held, the
    /// first block of a 206 with a strong ETag (its request then ends), or the 206 to read as
    /// it comes. The error that fails the read, if any.
    func takeOpening() -> BlobStreamError? {
        guard answers.awaitingFirst else { return BlobStreamError(.notOpen, "\(name): the source is not open") }
        let onLoop = deadlockCheck()
        let (waited, opening, stream) = shared.awaitOpening(onLoop: onLoop != nil)
        if !waited { return onLoop }
        guard case .success(let (object, first))? = opening else {
            return opening?.failureValue ?? BlobStreamError(.closed, "\(name): closed while opening")
        }
        answers.awaitingFirst = false
        answers.object = object
        switch first {
        case .held(let block):
            // A whole object, nothing at the end, or the first block a hedge brought.
            pipeline.current = block
            plan.heldFirstBlock(endingAt: block?.end)
        case .streamed:
            guard let stream else { return BlobStreamError(.closed, "\(name): closed while opening") }
            // From here its body must come at the minimum rate (time the reader holds it back aside).
            if let rate = options.minimumRate { stream.watch(rate) }
            return takeFirstBlock(of: stream, first: first, object: object)
        }
        return nil
    }

    /// Takes the first block out of the first answer (a 206 to `bytes=OFFSET-`): with a
    /// strong ETag, its first `options.blockSize` bytes, then the request ends and the blocks
    /// after it are asked for (a body cut before that block is whole is asked again, with
    /// `If-Match`, under the retry budget); without one, the answer is read as it arrives.
    private func takeFirstBlock(of openStream: RangeStream, first: FirstAnswer, object: RemoteObject)
        -> BlobStreamError?
    {
        guard case .streamed(let last) = first else { return nil }
        guard object.etag != nil else {
            // Read as it arrives: as much held as a block (the first block may have been small).
            openStream.raiseLimit(to: options.blockSize)
            answers.streamed = Streamed(stream: openStream, at: openStream.offset, end: last + 1)
            return nil
        }
        let count = Int(min(Int64(plan.firstBlock), last + 1 - openStream.offset))
        // The reader moved away before its first read (an index's seek point, a member):
        // the first block is not waited for; the read asks for the block where it is.
        if position < openStream.offset || position >= openStream.offset + Int64(count) {
            openStream.cancel()
            shared.lock.withLock { shared.stream = nil }
            return nil
        }
        // Nothing past the block is read from the connection: the request ends after it.
        openStream.takeOnly(count)
        let bytes = PinnedBytes(capacity: count, from: sender.memory)
        var filled = 0
        let range = openStream.offset...openStream.offset + Int64(count) - 1
        while filled < count {
            let taken = sender.take(from: openStream, into: bytes.start + filled, maxLength: count - filled)
            let cut: BlobStreamError
            let reason: RetryReason?
            switch taken {
            case .success(.bytes(let n)):
                filled += n
                continue
            case .success(.end(let received)):
                (cut, reason) = (answers.judge.cut(nil, received: received, range: range), .failure)
            case .success(.failed(let failure)):
                cut = answers.judge.cut(failure, received: 0, range: range)
                reason = RetryBudget.reason(.failure(failure), judged: cut)
            case .failure(let error):
                return error
            }
            // The first block is asked again by itself (If-Match), as any later block is.
            guard let reason, let wait = sender.budget.wait(after: 1, reason: reason) else { return cut }
            openStream.cancel()
            shared.lock.withLock { shared.stream = nil }
            if let stopped = sender.pause(for: wait) { return stopped }
            pipeline.firstBlockAttempts = 2
            plan.lastBlockEnd = range.lowerBound // asked again whole: the next block, not a jump
            return nil
        }
        // The other blocks come with If-Match: this answer's request ends here.
        openStream.cancel()
        shared.lock.withLock { shared.stream = nil }
        bytes.setCount(count)
        pipeline.current = RangeBlock(start: openStream.offset, bytes: bytes)
        // A small first block ramps up; the blocks after it are asked for at its first read.
        plan.tookFirstBlock(endingAt: openStream.offset + Int64(count))
        return nil
    }

    /// A read from the first answer, read as it arrives (no strong ETag): `Streamed.read`.
    func readStreamed(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int, of object: RemoteObject) -> Int {
        guard answers.streamed != nil else { return -1 }
        let (sender, judge) = (self.sender, answers.judge)
        let read = answers.streamed!.read(buffer, maxLength: maxLength, position: &position, of: object, judge: judge) {
            sender.take(from: $0, into: $1, maxLength: $2)
        }
        switch read {
        case .success(let n):
            // The `n` bytes handed out end at `position` (those a forward move dropped before
            // them were not handed out: `checkWhole` then drops the check).
            let handedOut = UnsafeRawBufferPointer(start: buffer, count: n)
            if let error = checkWhole(handedOut, at: position - Int64(n), of: object) { return fail(error) }
            if position == object.length { state.isAtEnd = true }
            return n
        case .failure(let error):
            return fail(error)
        }
    }
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
