import BlobStream
import Foundation

/// Decodes an indexed gzip file on several threads and hands the bytes out in order.
///
/// The seek points of a `GzipIndex` (with chunk CRC-32s) cut the file into chunks that can
/// be decoded independently. The owner (a `GzipDataSource`, under its lock) reads the
/// compressed bytes of a job (one or more consecutive chunks, about `jobTarget` bytes of
/// output) through its own upstream reader and queues it; `workers` threads each take a job,
/// decode it whole with a `GzipIndexWalker` over those bytes (checking every chunk against
/// its CRC-32 and the trailer of every member that starts and ends inside the job) and mark
/// it done. The owner hands out the jobs' bytes in order, only once a job is done and
/// checked: a corrupt chunk is an error before any of its bytes, never wrong bytes.
///
/// Memory is bounded: at most `workers + 1` jobs and `memoryBudget` bytes (output plus
/// compressed input) are in flight. Only indexes whose chunks are all at most `largestChunk`
/// long are decoded this way (`canDecode`).
///
/// Thread safety: `queue`, `stopped` and every job's result are guarded by `condition`; the
/// owner's fields are used by one owner, one call at a time; `cancel()` may come from any
/// thread.
final class ParallelIndexedReader: @unchecked Sendable {
    // Unchecked Sendable: see "Thread safety" above; the rest is immutable.

    /// The uncompressed size a job aims at (consecutive chunks are grouped up to it).
    static let jobTarget: Int64 = 4 << 20
    /// The longest chunk this reader decodes; an index with a longer one is read sequentially.
    static let largestChunk: Int64 = 16 << 20
    /// The most bytes (output and compressed input) of the jobs in flight.
    static let memoryBudget: Int64 = 16 << 20

    /// One range of chunks, decoded by one worker.
    final class Job: @unchecked Sendable {
        // Unchecked Sendable: `output` is written by one worker before `done` is set under the
        // reader's condition, and read by the owner only after it saw `done` there; the rest
        // is immutable or guarded by the condition.
        let firstPoint: Int
        let endPoint: Int
        let start: Int64
        let end: Int64
        let compressedStart: Int64
        let compressed: JobInput
        let output: UnsafeMutablePointer<UInt8>
        var done = false
        var error: BlobStreamError?

        private let outputCapacity: Int
        private let pool: JobBufferPool

        init(
            firstPoint: Int, endPoint: Int, start: Int64, end: Int64, compressedStart: Int64, compressed: JobInput,
            pool: JobBufferPool
        ) {
            self.firstPoint = firstPoint
            self.endPoint = endPoint
            self.start = start
            self.end = end
            self.compressedStart = compressedStart
            self.compressed = compressed
            self.pool = pool
            (output, outputCapacity) = pool.take(capacity: max(1, Int(end - start)))
        }

        deinit { pool.give(output, capacity: outputCapacity) }

        var cost: Int64 { end - start + Int64(compressed.count) }
    }

    let index: GzipIndex
    let name: String
    /// The compressed bytes (the owner's reader; read only on the owner's calls).
    let upstream: BlobUpstreamReader
    let workers: Int
    /// The jobs' output buffers, used again (a new buffer costs a page fault per 4 KiB).
    private let outputBuffers = JobBufferPool(keepingAtMost: Int(memoryBudget))
    /// Decode with ISA-L (raw deflate from each seek point) instead of zlib.
    let usesIsal: Bool
    private let condition = NSCondition()

    // MARK: Guarded by `condition`
    private var queue: [Job] = []
    private var stopped = false

    // MARK: The owner's
    private var threadsStarted = false
    private var pending: [Job] = []
    private var nextPoint = 0
    /// The uncompressed offset of the next byte handed out.
    private(set) var position: Int64 = 0
    /// The next byte the owner wants; bytes before it are skipped.
    var target: Int64 = 0
    /// Every job was handed out (the last one checked the file's end).
    private(set) var isFinished = false
    /// How far past the wanted offset (`max(target, position)`) jobs may start: one job's worth
    /// after open or a jump (a short read there decodes only what it needs, on all the workers
    /// when it spans several jobs), doubled every time a job's bytes are handed out.
    private var reach = jobTarget

    /// Whether `index` can be decoded in parallel: it has chunk CRC-32s (a foreign index has
    /// none, and then only sequential reading checks trailers), and no chunk is too long.
    static func canDecode(_ index: GzipIndex) -> Bool {
        guard index.hasChunkCRC32s, index.uncompressedSize > 0 else { return false }
        return index.points.indices.allSatisfy {
            index.chunkEnd($0) - index.points[$0].uncompressedOffset <= largestChunk
        }
    }

    init(index: GzipIndex, name: String, upstream: BlobUpstreamReader, workers: Int, usesIsal: Bool) {
        precondition(workers > 0, "workers must be positive")
        self.index = index
        self.name = name
        self.upstream = upstream
        self.workers = workers
        self.usesIsal = usesIsal && Self.isalCanDecodeRaw
    }

    deinit { cancel() }

    /// Ends the work for good (any thread): waiting reads fail with `.closed`, the threads
    /// exit after the job they are decoding.
    func cancel() {
        condition.lock()
        stopped = true
        queue.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    /// Starts over at uncompressed `offset` (the seek point at or before it); jobs in flight
    /// are dropped.
    func restart(at offset: Int64) throws(BlobStreamError) {
        if let length = upstream.length, length != index.compressedSize {
            throw BlobStreamError(
                .changed, "\(name): the index is for \(index.compressedSize) compressed bytes, the source has \(length)"
            )
        }
        let dropped = pending
        pending = []
        condition.lock()
        queue.removeAll { job in dropped.contains { $0 === job } }
        condition.unlock()
        nextPoint = index.pointIndex(atOrBefore: min(offset, index.uncompressedSize - 1)) ?? 0
        position = index.points[nextPoint].uncompressedOffset
        target = offset
        isFinished = false
        reach = Self.jobTarget
    }

    /// Hands out up to `capacity` bytes in order (skipping to `target` first); 0 only at the
    /// end. Returns early with what it has when the next job is not decoded yet.
    func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError)
        -> Int
    {
        var n = 0
        while n < capacity || target > position {
            try submit()
            guard let head = pending.first else {
                isFinished = true
                if target > position {
                    throw BlobStreamError(
                        .invalidOffset,
                        "\(name): offset \(target) is past the end of the decompressed bytes (\(position) bytes)")
                }
                return n
            }
            if n > 0 && !isDone(head) { return n }
            try wait(for: head)
            let available = head.end - position
            if available == 0 {
                pending.removeFirst()
                if handedOut(from: head) { reach = min(2 * reach, Int64(workers + 1) * Self.memoryBudget) }
                continue
            }
            if target > position {
                position += min(available, target - position)
                continue
            }
            let take = Int(min(available, Int64(capacity - n)))
            (out + n).update(from: head.output + Int(position - head.start), count: take)
            n += take
            position += Int64(take)
        }
        return n
    }

    // MARK: - The owner's side

    /// Whether some of `job`'s bytes were handed out (not all skipped to reach `target`).
    private func handedOut(from job: Job) -> Bool { target < job.end }

    private func isDone(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return job.done
    }

    private func wait(for job: Job) throws(BlobStreamError) {
        condition.lock()
        while !job.done && !stopped { condition.wait() }
        let done = job.done
        let error = job.error
        condition.unlock()
        if let error { throw error }
        if !done { throw BlobStreamError(.closed, "\(name): closed while decoding") }
    }

    /// Queues jobs while there is room in flight.
    private func submit() throws(BlobStreamError) {
        var cost = pending.reduce(Int64(0)) { $0 + $1.cost }
        while nextPoint < index.points.count && pending.count < workers + 1
            && (pending.isEmpty || index.points[nextPoint].uncompressedOffset < max(target, position) + reach)
        {
            let job = try makeJob(from: nextPoint, budgetLeft: Self.memoryBudget - cost)
            guard let job else { return }
            startThreads()
            cost += job.cost
            pending.append(job)
            nextPoint = job.endPoint
            condition.lock()
            if stopped {
                condition.unlock()
                throw BlobStreamError(.closed, "\(name): closed while decoding")
            }
            queue.append(job)
            condition.signal()
            condition.unlock()
        }
    }

    /// The job from point `first`, with its compressed bytes read; nil when it would exceed
    /// the budget left (and other jobs are in flight).
    private func makeJob(from first: Int, budgetLeft: Int64) throws(BlobStreamError) -> Job? {
        let points = index.points
        let start = points[first].uncompressedOffset
        var end = first + 1
        while end < points.count && index.chunkEnd(end) - start <= Self.jobTarget { end += 1 }
        let compressedStart = points[first].compressedOffset - (points[first].bitOffset > 0 ? 1 : 0)
        // A little past the next point: an inflater may look ahead (it stops at the output's end).
        let compressedEnd =
            end < points.count ? min(points[end].compressedOffset + 64, index.compressedSize) : index.compressedSize
        let cost = index.chunkEnd(end - 1) - start + compressedEnd - compressedStart
        if cost > budgetLeft && !pending.isEmpty { return nil }
        let bytes = JobInput(count: Int(compressedEnd - compressedStart))
        try upstream.seek(to: compressedStart)
        var have = 0
        while have < bytes.count {
            let result = upstream.read(into: bytes.start + have, maxLength: bytes.count - have, waiting: true)
            switch result {
            case .bytes(let count): have += count
            case .end, .starved:
                throw BlobStreamError(
                    .changed,
                    "\(name): the compressed bytes end at offset \(compressedStart + Int64(have)) but the index says \(index.compressedSize)"
                )
            case .failed(let error):
                let code = (error as? BlobStreamError)?.code ?? .sourceFailed
                throw BlobStreamError(
                    code,
                    "\(name): the upstream failed at compressed offset \(compressedStart + Int64(have)): \(error)",
                    cause: error)
            }
        }
        return Job(
            firstPoint: first, endPoint: end, start: start, end: index.chunkEnd(end - 1),
            compressedStart: compressedStart, compressed: bytes, pool: outputBuffers)
    }

    private func startThreads() {
        guard !threadsStarted else { return }
        threadsStarted = true
        for i in 0..<workers {
            let thread = Thread { [self] in work() }
            thread.name = "BlobStreamGzip.parallel.\(i)"
            thread.start()
        }
    }

    // MARK: - The workers' side

    private func work() {
        while true {
            condition.lock()
            while queue.isEmpty && !stopped { condition.wait() }
            if stopped {
                condition.unlock()
                return
            }
            let job = queue.removeFirst()
            condition.unlock()
            var failure: BlobStreamError?
            do {
                if usesIsal { try decodeWithIsal(job) } else { try decode(job) }
            } catch {
                failure = error
            }
            condition.lock()
            job.error = failure
            job.done = true
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Decodes `job` whole into its output, checking its chunks, the trailers of the members
    /// that end inside it, and (for the last job) the file's end.
    private func decode(_ job: Job) throws(BlobStreamError) {
        let bytes = job.compressed
        let source = OffsetReadSource(from: job.compressedStart, to: job.compressedStart + Int64(bytes.count)) {
            (buffer, count, offset) throws(BlobStreamError) in
            let start = Int(offset - job.compressedStart)
            let n = min(count, bytes.count - start)
            UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.start + start, byteCount: n)
            return n
        }
        let upstream = BlobUpstreamReader(source)
        defer { upstream.close() }
        upstream.open()
        let walker = try GzipIndexWalker(upstream: upstream, name: name, mode: .verify(index))
        try walker.start(atPoint: job.firstPoint, of: index)
        let length = Int(job.end - job.start)
        var n = 0
        while n < length {
            let got = try walker.read(into: job.output + n, capacity: length - n)
            if got == 0 { break }
            n += got
        }
        if n < length {
            throw BlobStreamError(
                .changed,
                "\(name): the file ends at uncompressed offset \(job.start + Int64(n)) but its index says more")
        }
        if job.endPoint == index.points.count {
            var extra: UInt8 = 0
            if try walker.read(into: &extra, capacity: 1) != 0 {
                throw BlobStreamError(
                    .changed, "\(name): the file has more than the \(index.uncompressedSize) bytes its index says")
            }
        } else if !index.points[job.endPoint].hasWindow {
            try walker.readMemberEnd()
        }
    }
}
