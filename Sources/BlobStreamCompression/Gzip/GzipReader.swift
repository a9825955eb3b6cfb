import BlobStream
import Foundation

/// Decodes a gzip stream read through a `BlobUpstreamReader`: the one path from a member's
/// compressed bytes to its decompressed bytes, shared by `GzipDataSource` and by the archive
/// module's indexed tar.gz members (which hand it the reader they already hold, so the bytes
/// are buffered once).
///
/// It picks the `GzipDecodingStrategy` and switches between them: `GzipDecoder` from the
/// start; with a `GzipIndex` (over a synchronous upstream), `GzipIndexWalker` from the seek
/// point before a far move, or `ParallelIndexedReader` when the index allows it and
/// `parallelism` > 1 (it takes over from the decoder after the decoder's first bytes,
/// restarting at the decoder's last check); with `indexSpacing`, a walker that builds an
/// index while it reads from the start.
///
/// An event-driven owner (`GzipDataSource`) gets `.starved` when an asynchronous upstream
/// has nothing now, and waits for its announcement; an owner whose reads block
/// (`ownerWaits`) never does: every strategy, the sequential decoder too, waits there for
/// the announcement.
///
/// The owner moves `target` forward as it hands bytes out (`decode` writes the bytes from
/// `target` on and does not move it). Not thread-safe: the owner serializes calls, except
/// `interrupt()`.
package final class GzipReader {
    /// The compressed bytes.
    package let upstream: BlobUpstreamReader
    /// How errors name the source.
    package let errors: GzipErrors
    /// The engine of the sequential decoder: `.isal` or `.zlib`.
    package let engine: InflateEngine
    /// The seek points (nil over an asynchronous upstream that cannot seek: an index needs
    /// reads that wait).
    package let index: GzipIndex?
    /// An `index` without chunk CRC-32s may be used (unverified reads).
    private let acceptsUncheckedIndex: Bool
    /// Build an index during a whole read from the start, with this spacing (nil: don't).
    private let indexSpacing: Int?
    private let decoder: GzipDecoder
    /// With an index that allows it and `parallelism` > 1.
    private let parallel: ParallelIndexedReader?
    private var strategy: any GzipDecodingStrategy
    /// The index built during the read (`indexSpacing`), once a read reached the end cleanly.
    package private(set) var builtIndex: GzipIndex?
    /// The first error; sticky.
    package private(set) var failure: BlobStreamError?
    /// The decompressed offset of the next byte to hand out.
    package var target: Int64 = 0

    /// Makes a reader of `upstream` (opened by the caller, before or after `prepare()`).
    ///
    /// - Parameters:
    ///   - index: seek points of these compressed bytes (ignored over an asynchronous
    ///     upstream that cannot seek).
    ///   - indexSpacing: build an index while reading from the start (synchronous upstream,
    ///     no `index`); nil: don't.
    ///   - parallelism: with an `index` that allows it (over an upstream that can seek), how
    ///     many threads decode.
    ///   - ownerWaits: the owner reads on a thread of its own and its reads may wait for an
    ///     asynchronous upstream (a tar.gz member over an object on a store): `decode` then
    ///     never answers `.starved` (the sequential decoder waits for the upstream's
    ///     announcement, as the walker and the parallel reader do), and several threads may
    ///     decode over an asynchronous upstream too. False (an event-driven owner): `.starved`
    ///     when an asynchronous upstream has nothing now.
    package init(
        upstream: BlobUpstreamReader, name: String, index: GzipIndex?, indexSpacing: Int?, engine: InflateEngine,
        isal: IsalAvailability, parallelism: Int, acceptsUncheckedIndex: Bool, ownerWaits: Bool = false
    ) {
        self.upstream = upstream
        self.errors = GzipErrors(name: name)
        self.engine = engine.resolved(with: isal)
        // An index needs reads that wait: a synchronous upstream, or an asynchronous one
        // that can seek (an object read by ranged GETs, whose reads wait for their bytes
        // once it is open).
        self.index = upstream.isAsynchronous && upstream.offsetCapability != .seek ? nil : index
        self.acceptsUncheckedIndex = acceptsUncheckedIndex
        self.indexSpacing = index == nil && !upstream.isAsynchronous ? indexSpacing : nil
        // Over an asynchronous upstream only when the owner reads on its own thread with reads
        // that wait (a tar.gz member over an object on a store): the jobs' compressed bytes
        // are read there, as the sequential decoder's would be.
        if let index = self.index, !upstream.isAsynchronous || ownerWaits, parallelism > 1,
            upstream.offsetCapability == .seek, ParallelIndexedReader.canDecode(index)
        {
            parallel = ParallelIndexedReader(
                index: index, name: name, upstream: upstream, workers: parallelism,
                usesIsal: self.engine == .isal)
        } else {
            parallel = nil
        }
        decoder = GzipDecoder(upstream: upstream, errors: errors, engine: engine, isal: isal, waits: ownerWaits)
        strategy = decoder
    }

    deinit { parallel?.cancel() }

    /// The default `parallelism`: the number of active cores, at most 8.
    package static var defaultParallelism: Int { min(8, max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    /// How errors name the source.
    package var name: String { errors.name }

    /// How many threads decode a whole read: the parallel reader's workers, or 1 (the
    /// sequential decoder, or the walker from a seek point).
    package var decodingThreads: Int { parallel?.workers ?? 1 }

    /// Decompressed bytes produced so far (handed out, looked ahead or discarded).
    package var produced: Int64 { strategy.produced }
    /// The last member ended at the upstream's end.
    package var isFinished: Bool { strategy.isFinished }
    /// The compressed offset of the next byte the decoding takes.
    package var compressedOffset: Int64 { upstream.offset }
    /// Every decompressed byte before this offset passed a check: the parallel reader hands
    /// out only checked chunks; the walker checks chunks and members; the decoder checks
    /// member trailers.
    package var verified: Int64 { strategy === parallel ? target : strategy.verified }

    /// Before the upstream opens: refuses an index that cannot be checked (unless accepted)
    /// and starts the engine; false after recording `failure`.
    package func prepare() -> Bool {
        if let index, !acceptsUncheckedIndex, index.points.contains(where: { $0.chunkCRC32 == nil }) {
            record(
                BlobStreamError(
                    .unsupported,
                    "\(name): the gzip index has no chunk CRC-32s (a foreign GZIDX): reads through it cannot be checked; adopt it first (GzipIndex.adopt), or accept unverified reads (acceptsUncheckedIndex)"
                ))
            return false
        }
        guard decoder.start() else {
            record(decoder.failure ?? errors.notOpen())
            return false
        }
        return true
    }

    /// Once the upstream is open (or opening): starts building an index, or jumps to the
    /// seek point before `target` when an index is used; false after recording `failure`.
    package func begin(upstreamOpened: Bool) -> Bool {
        if let indexSpacing {
            do {
                strategy = try GzipIndexWalker(upstream: upstream, name: name, mode: .build(spacing: indexSpacing))
            } catch {
                record(error)
                return false
            }
        }
        if index != nil && target > 0 && upstreamOpened, let error = jump(to: target) {
            record(error)
            return false
        }
        return true
    }

    /// The upstream's open completed after `begin(upstreamOpened: false)`: makes the jump
    /// that was put off then (an index, and a `target` set before the open), so that the
    /// first reads start at the seek point before it instead of inflating from the start;
    /// false after recording `failure`.
    package func upstreamOpenedLate() -> Bool {
        guard index != nil, target > 0, strategy === decoder, decoder.inflated == 0 else { return true }
        if let error = jump(to: target) {
            record(error)
            return false
        }
        return true
    }

    /// Records the first error (later ones are ignored).
    package func record(_ error: BlobStreamError) {
        if failure == nil { failure = error }
    }

    /// Decodes into `out` the bytes from `target` on; the parallel reader takes over from
    /// the sequential decoder after its first bytes (the probe at open stays cheap: a seek
    /// usually follows it).
    package func decode(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> GzipDecodeStep {
        if let failure { return .failed(failure) }
        if parallel != nil, strategy === decoder, decoder.inflated > 0, !decoder.isFinished {
            // The parallel reader starts at the decoder's last check (a member's trailer, or
            // the start), so that the chunks holding the bytes the decoder handed out are
            // decoded again and checked against the index before any further byte goes out.
            let wanted = target
            if let error = jump(to: decoder.verified) { return fail(error) }
            target = wanted
        }
        strategy.target = target
        let step = strategy.decode(into: out, capacity: capacity)
        switch step {
        case .failed(let error): record(error)
        case .end:
            if let walker = strategy as? GzipIndexWalker, walker.isFinished, let index = walker.builtIndex() {
                builtIndex = index
            }
        case .bytes, .starved: break
        }
        return step
    }

    /// How `move(to:keepingFrom:)` got there.
    package enum Move {
        /// To the seek point before the offset (bytes decoded ahead are no longer valid).
        case jumped
        /// Forward from where decoding is: bytes decoded ahead from `target` on stay valid.
        case forward
        /// Back to the first byte (bytes decoded ahead are no longer valid).
        case restarted
    }

    /// Moves to decompressed `offset`. `windowStart` is the first decompressed byte the
    /// owner can still hand out without decoding (its look-ahead's start, or `produced`).
    /// Sets `target`; throws the refusal.
    package func move(to offset: Int64, keepingFrom windowStart: Int64) throws(BlobStreamError) -> Move {
        let move: Move
        if let index, let p = index.pointIndex(atOrBefore: offset),
            offset < windowStart || windowStart < index.points[p].uncompressedOffset
        {
            // A seek point lies between here and there (or behind): jump to it.
            if let refusal = jump(to: offset) { throw refusal }
            move = .jumped
        } else if offset >= windowStart {
            move = .forward
        } else {
            guard decoder.restart() else {
                throw errors.refusedOffset(offset, "moving back needs an upstream that can move to its start")
            }
            strategy = decoder
            move = .restarted
        }
        target = offset
        return move
    }

    /// Starts decoding at the index's seek point at or before `offset`; the refusal, or nil.
    private func jump(to offset: Int64) -> BlobStreamError? {
        guard let index else { return nil }
        if let parallel {
            do {
                try parallel.restart(at: offset)
                strategy = parallel
                target = offset
                return nil
            } catch {
                return errors.failedJump(to: offset, error)
            }
        }
        do {
            strategy = try GzipIndexWalker.starting(at: offset, of: index, upstream: upstream, name: name)
            target = offset
            return nil
        } catch {
            return errors.failedJump(to: offset, error)
        }
    }

    private func fail(_ error: BlobStreamError) -> GzipDecodeStep {
        record(error)
        return .failed(error)
    }

    /// Stops the decoding threads (any thread): a read waiting for them fails with `.closed`.
    package func interrupt() { parallel?.cancel() }

    /// Stops the threads and frees the engine's state. The owner closes the upstream.
    package func end() {
        parallel?.cancel()
        decoder.end()
    }
}
