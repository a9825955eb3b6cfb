import BlobStream
import Foundation

/// Builds a `GzipIndex` in one pass while handing the uncompressed bytes to its owner, in
/// order, as they are produced (what `GzipIndex.build(from:spacing:name:)` discards): an
/// archive member index of a tar.gz reads the tar headers and each member's CRC-32 from the
/// same pass that places the seek points.
///
/// Pull-style: call `read(into:capacity:)` until it returns 0 (the end of the last gzip
/// member, every member's CRC-32 and ISIZE checked), then `finish()`. Not thread-safe: one
/// owner. Always call `close()`.
///
/// With zlib the owner's calls inflate (`GzipIndexWalker`). With ISA-L (the engine's
/// `.automatic` choice when it loads) the inflating runs on a thread of its own, through
/// `GzipIndex.build(from:spacing:name:engine:onOutput:)`, at most `BackgroundInflation.limit`
/// bytes ahead of the owner: the owner's work on the bytes (a tar walk, CRC-32s) then runs
/// beside the inflating, on another core.
package final class GzipIndexStreamingBuilder {
    private enum Work {
        case walker(BlobUpstreamReader, GzipIndexWalker)
        case background(BackgroundInflation)
    }

    private let work: Work

    /// Gets ready to inflate `source` (not opened yet) with `engine`.
    ///
    /// - Throws: `BlobStreamError` naming `name` when the source fails to open (zlib; with
    ///   ISA-L the first `read` throws it), the inflater cannot start, or ISA-L was asked
    ///   for and cannot be loaded.
    package init(
        source: any BlobDataSource, spacing: Int, name: String, engine: InflateEngine = .zlib
    ) throws(BlobStreamError) {
        precondition(spacing > 0, "spacing must be positive")
        let useIsal = try IsalIndexBuilder.isChosen(by: engine, name: name)
        if useIsal {
            work = .background(BackgroundInflation(source: source, spacing: spacing, name: name))
            return
        }
        let upstream = BlobUpstreamReader(source)
        do {
            try upstream.waitForOpen()
        } catch {
            upstream.close()
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed, "\(name): failed to open: \(error)", cause: error)
        }
        do {
            work = .walker(
                upstream, try GzipIndexWalker(upstream: upstream, name: name, mode: .build(spacing: spacing)))
        } catch {
            upstream.close()
            throw error
        }
    }

    /// Inflates the next uncompressed bytes into `out`: their count, 0 at the clean end.
    ///
    /// - Throws: `BlobStreamError` (`.truncated`, `.corrupt`, the upstream's error), naming
    ///   the source and the compressed offset.
    package func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError) -> Int {
        switch work {
        case .walker(_, let walker): try walker.read(into: out, capacity: capacity)
        case .background(let inflation): try inflation.read(into: out, capacity: capacity)
        }
    }

    /// Lends the next uncompressed bytes, at most `maximum`, to `body` instead of copying them
    /// out: their count, 0 at the clean end; nil when this builder cannot lend (zlib's, which
    /// inflates into the caller's buffer: use `read`).
    ///
    /// - Throws: as `read` does.
    package func lend(
        maximum: Int, to body: (UnsafeRawBufferPointer) -> Void
    ) throws(BlobStreamError) -> Int? {
        switch work {
        case .walker: nil
        case .background(let inflation): try inflation.lend(maximum: maximum, to: body)
        }
    }

    /// The index, once `read` returned 0; nil before.
    package func finish() -> GzipIndex? {
        switch work {
        case .walker(_, let walker): walker.builtIndex()
        case .background(let inflation): inflation.builtIndex
        }
    }

    /// Closes the upstream; stops the inflating thread and waits for it.
    package func close() {
        switch work {
        case .walker(let upstream, _): upstream.close()
        case .background(let inflation): inflation.stop()
        }
    }
}

/// `GzipIndex.build` with ISA-L on a thread of its own, its output handed over in chunks
/// through a bounded queue.
///
/// Thread safety: every mutable field is guarded by `condition`; the thread only pushes
/// chunks and sets the result, the owner only takes chunks and stops.
final class BackgroundInflation: @unchecked Sendable {
    // Unchecked Sendable: see "Thread safety" above; `source` is handed to the thread once
    // and never touched by the owner again.

    /// The most inflated bytes held for the owner.
    static let limit = 2 << 20

    /// How many emptied chunks are kept for the thread to fill again: their pages stay
    /// mapped, instead of a new allocation faulted in and zeroed for every chunk.
    private static let sparesKept = 8

    private let condition = NSCondition()
    private var chunks: [[UInt8]] = []
    private var spares: [[UInt8]] = []
    private var firstChunkOffset = 0
    private var held = 0
    private var result: Result<GzipIndex, BlobStreamError>?
    private var stopped = false
    private var threadDone = false
    private let name: String

    init(source: any BlobDataSource, spacing: Int, name: String) {
        self.name = name
        let handoff = SourceHandoff(source)
        let thread = Thread { [self] in
            let outcome: Result<GzipIndex, BlobStreamError>
            do throws(BlobStreamError) {
                let index = try GzipIndex.build(
                    from: handoff.source, spacing: spacing, name: name, engine: .isal,
                    onOutput: { bytes throws(BlobStreamError) in try self.push(bytes) })
                outcome = .success(index)
            } catch {
                outcome = .failure(error)
            }
            condition.lock()
            result = outcome
            threadDone = true
            condition.broadcast()
            condition.unlock()
        }
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// The thread's side: waits for room, then queues a copy of `bytes` (made outside the
    /// lock, into a spare chunk when there is one).
    private func push(_ bytes: UnsafeRawBufferPointer) throws(BlobStreamError) {
        guard bytes.count > 0 else { return }
        condition.lock()
        while held >= Self.limit && !stopped { condition.wait() }
        var chunk = spares.popLast() ?? []
        condition.unlock()
        chunk.removeAll(keepingCapacity: true)
        chunk.append(contentsOf: bytes.bindMemory(to: UInt8.self))
        condition.lock()
        defer { condition.unlock() }
        if stopped { throw BlobStreamError(.closed, "\(name): closed while indexing") }
        chunks.append(chunk)
        held += bytes.count
        condition.broadcast()
    }

    /// The owner's side: the next bytes, 0 at the clean end, or the build's error.
    func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError) -> Int {
        condition.lock()
        defer { condition.unlock() }
        while chunks.isEmpty && result == nil { condition.wait() }
        guard let first = chunks.first else {
            if case .failure(let error) = result! { throw error }
            return 0
        }
        let take = min(capacity, first.count - firstChunkOffset)
        first.withUnsafeBufferPointer { out.update(from: $0.baseAddress! + firstChunkOffset, count: take) }
        taken(take)
        return take
    }

    /// The owner's side, without a copy: lends the next bytes (at most `maximum`) to `body`,
    /// outside the lock; their count, 0 at the clean end, or the build's error.
    func lend(maximum: Int, to body: (UnsafeRawBufferPointer) -> Void) throws(BlobStreamError) -> Int {
        condition.lock()
        while chunks.isEmpty && result == nil { condition.wait() }
        guard let first = chunks.first else {
            defer { condition.unlock() }
            if case .failure(let error) = result! { throw error }
            return 0
        }
        let start = firstChunkOffset
        condition.unlock()
        // The thread only appends chunks: this one stays as it is until `taken` drops it.
        let take = min(maximum, first.count - start)
        first.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<start + take])) }
        condition.lock()
        defer { condition.unlock() }
        taken(take)
        return take
    }

    /// Under the lock: `count` bytes of the first chunk were handed out; an emptied chunk is
    /// kept as a spare.
    private func taken(_ count: Int) {
        firstChunkOffset += count
        held -= count
        if firstChunkOffset == chunks[0].count {
            let emptied = chunks.removeFirst()
            if spares.count < Self.sparesKept { spares.append(emptied) }
            firstChunkOffset = 0
        }
        condition.broadcast()
    }

    /// The index, once the build ended cleanly and every byte was read.
    var builtIndex: GzipIndex? {
        condition.lock()
        defer { condition.unlock() }
        guard chunks.isEmpty, case .success(let index) = result else { return nil }
        return index
    }

    /// Stops the thread (its next hand-over throws `.closed`) and waits until it ended.
    func stop() {
        condition.lock()
        stopped = true
        chunks = []
        spares = []
        held = 0
        condition.broadcast()
        while !threadDone { condition.wait() }
        condition.unlock()
    }
}

/// A source handed to the inflating thread once.
private struct SourceHandoff: @unchecked Sendable {
    // Unchecked Sendable: the owner makes it and never uses the source again.
    let source: any BlobDataSource
    init(_ source: any BlobDataSource) { self.source = source }
}

extension IsalIndexBuilder {
    /// Whether `engine` builds an index with ISA-L here: `.automatic` when it loads.
    ///
    /// - Throws: `.unsupported` naming `name` when `.isal` was asked for and cannot be loaded.
    static func isChosen(by engine: InflateEngine, name: String) throws(BlobStreamError) -> Bool {
        switch engine {
        case .zlib: return false
        case .automatic: return isAvailable
        case .isal:
            guard isAvailable else {
                let reason =
                    IsalAvailability.system.unavailableReason ?? "it lacks isal_inflate_set_dict or crc32_gzip_refl"
                throw BlobStreamError(
                    .unsupported, "\(name): the ISA-L inflate engine was asked for but is unavailable: \(reason)")
            }
            return true
        }
    }
}
