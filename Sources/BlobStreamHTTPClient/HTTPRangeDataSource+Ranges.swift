import AsyncHTTPClient
import BlobStream
import Foundation

// Several ranges asked for together, neighbours coalesced into one GET (as Arrow's
// object_store `get_ranges` does), for index and member reads.
extension HTTPRangeDataSource {
    /// Ranges whose gap is at most this many bytes are fetched by one GET (1 MiB, as Arrow's
    /// object_store `OBJECT_STORE_COALESCE_DEFAULT`).
    public static let defaultCoalescingGap: Int64 = 1 << 20

    /// The bytes of each of `ranges` (offsets in the object, in any order, overlaps and empty
    /// ranges allowed), in the order given. Ranges whose gap is at most `coalescingGap` bytes
    /// are fetched by one GET and sliced (the bytes of the gap are read and dropped); the GETs
    /// go `options.parallelism` at a time, each with `If-Match` and the retry policy, as the
    /// blocks of a read. Blocks until every range is in: call it on the thread that reads
    /// (never on an event loop of the client: `.wouldDeadlock`), after `open()`. The read
    /// offset does not move. Ranges that lie inside the block in hand (the first answer's
    /// block, or the one the last read used) are sliced from it with no request. Memory: the
    /// coalesced ranges in flight, then the results.
    ///
    /// ```swift
    /// let source = HTTPRangeDataSource(url: url)
    /// source.open()
    /// let parts = try source.bytes(in: [0..<512, 4_096..<8_192, 1_000_000..<1_000_100])  // 2 GETs
    /// ```
    ///
    /// - Throws: `BlobStreamError`: `.offsetUnsupported` when the server sent no strong ETag
    ///   (a second request could read another version), `.invalidOffset` for a range outside
    ///   the object, the error of the open, and those of a GET (`.changed`, `.httpFailed`…)
    ///   once its retries are spent.
    public func bytes(in ranges: [Range<Int64>], coalescingGap: Int64 = defaultCoalescingGap) throws(BlobStreamError)
        -> [Data]
    {
        let object = try openedObject(before: "asking for ranges")
        guard object.etag != nil else {
            throw answers.judge.needsSecondRequest(at: ranges.first?.lowerBound ?? 0, of: object)
        }
        plan.noDownload()
        if let outside = ranges.first(where: { $0.lowerBound < 0 || $0.upperBound > object.length }) {
            throw BlobStreamError(
                .invalidOffset,
                "bytes \(outside.lowerBound)..<\(outside.upperBound) are outside \(name) (\(object.length) bytes)")
        }
        // Ranges inside the block in hand (the first answer's, most often) or the object's end
        // asked for at open need no request.
        var held = pipeline.current.map { [$0] } ?? []
        if let end = ranges.lazy.compactMap({ self.pipeline.endBlock(covering: $0, of: object) }).first {
            held.append(end)
        }
        let missing = ranges.filter { range in
            !range.isEmpty && !held.contains { $0.start <= range.lowerBound && range.upperBound <= $0.end }
        }
        var fetched: [RangeBlock] = held
        // Ranges a planned read (`expectRead`) is bringing: its answer, no other request.
        for fetch in pipeline.aheads(bringing: missing) {
            pipeline.aheads.removeAll { $0 === fetch }
            fetched.append(try pipeline.completed(fetch, of: object).get())
        }
        let merged = RangeCoalescing.coalesce(
            missing.filter { range in !fetched.contains { $0.start <= range.lowerBound && range.upperBound <= $0.end }
            },
            gap: max(coalescingGap, 0))
        for window in stride(from: 0, to: merged.count, by: options.parallelism) {
            let fetches = merged[window..<min(window + options.parallelism, merged.count)].map {
                RangeFetch(range: $0.lowerBound...$0.upperBound - 1)
            }
            for fetch in fetches { sender.start(fetch, object: object) }
            for (index, fetch) in fetches.enumerated() {
                switch pipeline.completed(fetch, of: object) {
                case .success(let block): fetched.append(block)
                case .failure(let error):
                    for other in fetches[(index + 1)...] {
                        other.cancel()
                        forget(other)
                    }
                    throw error
                }
            }
        }
        return ranges.map { range in
            guard !range.isEmpty else { return Data() }
            let block = fetched.first { $0.start <= range.lowerBound && range.upperBound <= $0.end }!
            // One memcpy (a Data made from the collection would copy byte by byte).
            let from = Int(range.lowerBound - block.start)
            return Data(UnsafeBufferPointer(rebasing: block.bytes.buffer[from..<from + range.count]))
        }
    }
}

/// Merges byte ranges for fewer requests.
enum RangeCoalescing {
    /// The non-empty `ranges`, sorted, with those that overlap or lie at most `gap` bytes
    /// apart merged into one.
    static func coalesce(_ ranges: [Range<Int64>], gap: Int64) -> [Range<Int64>] {
        var merged: [Range<Int64>] = []
        for range in ranges.filter({ !$0.isEmpty }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound + gap {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }
}

// What an index is read through and checked against (`BlobRangeReading`): ranges by
// `bytes(in:)`, the identity from the first answer (size and strong ETag).
extension HTTPRangeDataSource: BlobRangeReading {
    /// The object the first answer described, waited for; the source's error, `.notOpen`
    /// before `open()` (naming `what` the caller was doing), or the error of the open.
    func openedObject(before what: String) throws(BlobStreamError) -> RemoteObject {
        if let error = state.error as? BlobStreamError { throw error }
        guard opened, !closed else { throw BlobStreamError(.notOpen, "\(name): open the source before \(what)") }
        if answers.object == nil, let error = takeOpening() {
            fail(error)
            throw error
        }
        guard let object = answers.object else { throw BlobStreamError(.closed, "\(name): the source is not open") }
        return object
    }

    /// The URL's scheme, host and port (the scheme's default port when it names none), in
    /// lower case: `https://s3.example.com:443`.
    public var serverOrigin: String? {
        let scheme = url.scheme?.lowercased() ?? "https"
        let port = url.port ?? (scheme == "http" ? 80 : 443)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }

    /// `bytes(in:)` with the default coalescing gap.
    public func bytes(at ranges: [Range<Int64>]) throws(BlobStreamError) -> [Data] {
        try bytes(in: ranges)
    }

    /// The object's size and strong ETag, from the first answer (waited for); nil when the
    /// server sent no strong ETag (a second request could read another version, so no
    /// index can be checked against the object).
    ///
    /// - Throws: `BlobStreamError`: `.notOpen` before `open()`, the error of the open.
    public func contentIdentity() throws(BlobStreamError) -> BlobContentIdentity? {
        let object = try judgedObject(before: "asking what it holds")
        return object.etag.map { BlobContentIdentity.remote(size: object.length, entityTag: $0) }
    }

    /// Makes the first answer's block small (64 KiB, or the block size when smaller), so
    /// that a reader that jumps (an archive's index or directory, then a member; a gzip
    /// index's seek point) does not wait for a large block from the start. Before `open()`;
    /// a read that goes on from the start ramps up to `options.blockSize` as after a jump.
    public func expectRandomAccess() {
        guard !opened else { return }
        plan.expectRandomAccess()
    }

    /// Asks for `range` now, as one GET (at most `blockSize` of it), unless the block in
    /// hand or the one asked for next already starts there. Reads ahead stop at its end until
    /// a read goes past it, then start again small (a range longer than `blockSize` keeps
    /// full read-ahead). Without a strong ETag nothing is done.
    ///
    /// Before `open()`, a range that starts at the read offset is the first answer: the
    /// first GET asks for that range (at most `blockSize`; `Range: bytes=OFFSET-LAST`), not
    /// for the object from there (an index object's head and member table, not 8 MiB of its
    /// windows). A read past it asks for more, as after a jump; without a strong ETag it
    /// fails (`.offsetUnsupported`). Later, nothing is done until the first answer is judged.
    public func expectRead(_ range: Range<Int64>) {
        if !opened {
            guard !closed, range.lowerBound == position, range.upperBound > range.lowerBound else { return }
            plan.expectFirstBlock(of: range.upperBound - range.lowerBound)
            return
        }
        guard state.error == nil, !closed, let object = try? judgedObject(before: "planning a read"),
            object.etag != nil
        else { return }
        var from = max(range.lowerBound, 0)
        var to = min(range.upperBound, object.length, from + Int64(options.blockSize))
        guard from < to else { return }
        // The block in hand, or the first answer's block not taken yet, brings these bytes:
        // a short range then asks for nothing ahead of that block (`plannedEnd`).
        var held: (start: Int64, end: Int64)? = pipeline.current.map { ($0.start, $0.end) }
        if held == nil, answers.awaitingFirst, let first = shared.lock.withLock({ shared.stream?.offset }) {
            held = (first, first + Int64(plan.firstBlock))
        }
        if let held, held.start <= from, from < held.end {
            if to <= held.end {
                if range.upperBound <= to { plan.plannedEnd = to }
                return
            }
            // The range starts in that block: only the bytes after it are asked for (no
            // second request for bytes the first brings).
            from = held.end
            to = min(range.upperBound, object.length, from + Int64(options.blockSize))
        }
        if pipeline.end.holds(from: from, of: object) { return } // the object's end, asked for at open
        // One GET, unless the block asked for next already starts there.
        guard pipeline.ask(from...to - 1, of: object) else { return }
        // Past the planned bytes: a long range reads on at full speed; a short one stops
        // there (no block ahead) and, if a read goes on, starts small again.
        plan.planned(from: from, to: to, isLong: range.upperBound > to)
    }

    /// Asks for the object's last `count` bytes beside the first GET, at `open()` (with
    /// `Range: bytes=-COUNT`: the length is not known yet), so that a reader that needs the
    /// end of an index (a GZIDX's record, after its windows) does not wait for the first
    /// answer before asking. Their answer is used only when it is a 206 of exactly those
    /// bytes carrying the first answer's strong ETag; otherwise they are asked for again as
    /// any range is. Before `open()`; nothing is done after it.
    public func expectEnd(_ count: Int) {
        guard !opened, count > 0 else { return }
        pipeline.end.count = count
        plan.noDownload()
    }

    /// The object the first answer described, once judged: its body (the first block) is
    /// not waited for. The source's error, `.notOpen` before `open()`, or the open's error.
    func judgedObject(before what: String) throws(BlobStreamError) -> RemoteObject {
        if let object = answers.object { return object }
        if let error = state.error as? BlobStreamError { throw error }
        guard opened, !closed else { throw BlobStreamError(.notOpen, "\(name): open the source before \(what)") }
        let onLoop = deadlockCheck()
        let (waited, opening, _) = shared.awaitOpening(onLoop: onLoop != nil)
        guard waited else {
            throw onLoop ?? BlobStreamError(.wouldDeadlock, "\(name): would wait on an event loop")
        }
        switch opening {
        case .success(let (object, _))?: return object
        case .failure(let error)?: throw error
        case nil: throw BlobStreamError(.closed, "\(name): closed while opening")
        }
    }
}
