import Foundation

/// How a source that wraps another (gzip over a file, an archive member over a gzip stream,
/// a slice of anything) reads the source it wraps: the one upstream reader of the kit.
///
/// It owns the upstream: `open()` opens it, `close()` (or deinitialization) closes it,
/// opened or not. It buffers the upstream's reads, moves to an offset by the cheapest way the
/// upstream offers, and hands on what the upstream says (its error, its end, an interrupt,
/// where it completes, its asynchronous announcements).
///
/// ## Reading
/// - `fill(atLeast:waiting:)` reads into the reader's buffer and lends the unconsumed bytes
///   (valid until the next call on the reader); `consume(_:)` takes them. Made for decoders
///   that hand input to a C library (zlib, libarchive).
/// - `read(into:maxLength:waiting:)` copies into the caller's buffer (straight from the
///   upstream, with no copy in between, when nothing is buffered and the read is large).
///
/// Both answer `.end` at the upstream's end, `.failed` with the upstream's own error (or
/// `.closed`, `.wouldDeadlock`, a `-1` without an error) — sticky: every later call answers
/// the same — and, over an asynchronous upstream with nothing available now, either:
/// - `.starved` (`waiting: false`, the event-driven style of `GzipDataSource`: the reader
///   never waits; `onChange` tells when the upstream announced something, on the
///   upstream's thread), or
/// - waits for the announcement (`waiting: true`, the blocking style of an archive reader),
///   unless the calling thread is where the upstream announces
///   (`completionContext.isCurrent`): then `.failed` with `.wouldDeadlock` at once.
///   `cancel()` or `interrupt()` from any thread ends a wait (`.closed`).
///
/// The upstream is read only when it says `hasBytesAvailable` or to collect its end or error
/// (contract rule 2); a waiting read of a synchronous upstream reads it in any case (it has
/// no announcement to come).
///
/// ## Offsets
/// `offset` is the upstream offset of the next byte handed out. `seek(to:)` moves within the
/// buffer when it can; otherwise with the upstream's `seek(to:)` when the upstream can seek
/// (`.seek`) or for a backward move, and by reading and discarding (at the next fill or
/// read) for a forward move over an upstream that cannot seek. A discard that meets the
/// end answers `.end` with `offset` at the upstream's end: the caller tells a short input.
/// Read sizes adapt: after open and after each move, a read asks for `minimumReadSize`
/// bytes, and each further one twice as much, up to `bufferSize`.
///
/// ```swift
/// let upstream = BlobUpstreamReader(source, onChange: { [weak self] in self?.upstreamChanged() })
/// upstream.open()
/// switch upstream.fill(waiting: true) {
/// case .bytes(let bytes): decode(bytes); upstream.consume(bytes.count)
/// case .end: finish()
/// case .starved: break  // not when waiting
/// case .failed(let error): fail(error)
/// }
/// ```
///
/// A wrapping source includes the reader's `completionContext` in its own (it completes
/// where the upstream does, and wherever `onChange` sends the work), passes `interrupt()` on,
/// and closes the reader in its own `close()`.
///
/// Thread safety: one owner calls it, one call at a time (the wrapping source's own
/// serialized calls); `cancel()`, `interrupt()`, `isCancelled`, `isUpstreamReady` and the
/// observers may be used from any thread.
public final class BlobUpstreamReader: @unchecked Sendable {
    // Unchecked Sendable: the mutable fields are the owner's (one call at a time); what
    // other threads touch is `waiter` (a condition and an atomic) and `source`'s own
    // thread-safe state and `interrupt()`.

    /// The default buffer size (the largest read).
    public static let defaultBufferSize = 128 * 1024

    /// The upstream source, owned by this reader.
    public let source: any BlobDataSource
    /// The upstream completes work outside its calls (`completionContext` is not `.caller`).
    public let isAsynchronous: Bool
    /// The largest read, and the buffer's size.
    public let bufferSize: Int
    /// The first read, and the first after each move.
    public let minimumReadSize: Int

    private let waiter: UpstreamWaiter
    private var observations: [BlobObservation] = []
    private var buffer: UnsafeMutableRawPointer?
    /// `buffer[start..<end]` is not consumed yet; `buffer[0..<start]` was, and stays for
    /// moves backward within it.
    private var start = 0, end = 0
    /// The upstream offset of `buffer[0]`.
    private var base: Int64 = 0
    /// A forward move to do by discarding, at the next fill or read.
    private var discardTarget: Int64?
    private var readSize: Int
    private var opened = false, closed = false
    private var failure: (any Error)?

    /// The upstream has said its end (the buffer may still hold bytes).
    public private(set) var reachedEnd = false

    /// Makes a reader of `source`, which must not be opened yet.
    ///
    /// - Parameters:
    ///   - source: the upstream; owned from now on.
    ///   - bufferSize: the largest read.
    ///   - minimumReadSize: the first read and the first after a move; `bufferSize` (fixed
    ///     reads) by default.
    ///   - onChange: called, on the thread that made the change, after an asynchronous
    ///     upstream announced something (open, bytes, end, error); nil for a synchronous one.
    public init(
        _ source: any BlobDataSource, bufferSize: Int = BlobUpstreamReader.defaultBufferSize,
        minimumReadSize: Int? = nil, onChange: (@Sendable () -> Void)? = nil
    ) {
        precondition(bufferSize > 0, "bufferSize must be positive")
        self.source = source
        self.bufferSize = bufferSize
        self.minimumReadSize = min(max(minimumReadSize ?? bufferSize, 1), bufferSize)
        self.readSize = self.minimumReadSize
        if case .caller = source.completionContext { isAsynchronous = false } else { isAsynchronous = true }
        waiter = UpstreamWaiter(onChange: onChange)
    }

    deinit {
        if !closed { source.close() }
        buffer?.deallocate()
    }

    // MARK: - State

    /// Where the upstream completes its work (a wrapping source includes it in its own
    /// `completionContext`).
    public var completionContext: BlobCompletionContext { source.completionContext }
    /// The upstream's length, when known.
    public var length: Int64? { source.length }
    /// How the upstream moves.
    public var offsetCapability: BlobOffsetCapability { source.offsetCapability }
    /// The upstream finished opening.
    public var isOpenCompleted: Bool { source.isOpenCompleted }
    /// The upstream offset of the next byte handed out.
    public var offset: Int64 { discardTarget ?? base + Int64(start) }
    /// Bytes read from the upstream and not consumed yet.
    public var bufferedCount: Int { discardTarget == nil ? end - start : 0 }
    /// The upstream has bytes, its end or its error to hand out: a fill or read would not
    /// starve. Reads the upstream's state only, so any thread may ask (an observer does).
    public var isUpstreamReady: Bool {
        let state = source.state
        return state.hasBytesAvailable || state.isAtEnd || state.error != nil
    }
    /// The error that stopped the reader (the upstream's, or `.closed`, `.wouldDeadlock`).
    public var error: (any Error)? { failure ?? source.error }

    // MARK: - Open and close

    /// Opens the upstream (observing it first when it is asynchronous). Once only.
    public func open() {
        guard !opened, !closed else { return }
        opened = true
        if isAsynchronous { observations = waiter.observe(source) }
        source.open()
    }

    /// Waits until the upstream has opened (at once for a synchronous one). Throws the
    /// upstream's error, `.wouldDeadlock` when this thread is where it announces, `.closed`
    /// after `cancel()`, or `.sourceFailed` when a synchronous upstream did not complete its
    /// open.
    public func waitForOpen() throws {
        if !opened { open() }
        while true {
            if let error = source.error { throw error }
            if source.isOpenCompleted { return }
            if waiter.isCancelled { throw BlobStreamError(.closed, "closed while opening") }
            guard isAsynchronous else {
                throw BlobStreamError(
                    .sourceFailed,
                    "the upstream (\(type(of: source))) says it completes inside its calls but did not complete its open"
                )
            }
            if source.completionContext.isCurrent {
                throw BlobStreamError(
                    .wouldDeadlock, "waiting for the upstream's open on the very thread that announces it")
            }
            waiter.wait { self.source.isOpenCompleted || self.source.error != nil }
        }
    }

    /// Ends every wait, now and later (any thread); later calls answer `.closed`.
    public func cancel() { waiter.cancel() }

    /// `cancel()`, `interrupt()` or `close()` was called (any thread may ask).
    public var isCancelled: Bool { waiter.isCancelled }

    /// Ends a wait and passes the interruption on to the upstream, whose read may be
    /// blocked in I/O (any thread). Later calls answer `.closed`.
    public func interrupt() {
        waiter.cancel()
        source.interrupt()
    }

    /// Closes the upstream (opened or not), stops observing it, ends every wait and frees
    /// the buffer. Later calls answer `.closed`.
    public func close() {
        waiter.cancel()
        guard !closed else { return }
        closed = true
        let tokens = observations
        observations = []
        for token in tokens { token.invalidate() }
        source.close()
        buffer?.deallocate()
        buffer = nil
        start = 0
        end = 0
    }

    // MARK: - Reading

    /// Reads until at least `count` (≤ `bufferSize`) unconsumed bytes are buffered, or the
    /// upstream ended, or (not waiting) has nothing now; lends them.
    public func fill(atLeast count: Int = 1, waiting: Bool = false) -> Filled {
        let wanted = min(max(count, 1), bufferSize)
        if let stop = discard(waiting: waiting) { return filled(stop) }
        while end - start < wanted && !reachedEnd {
            let result = readIntoBuffer(waiting: waiting, wanted: wanted)
            if case .bytes = result { continue }
            if case .end = result { break }
            if end > start { break } // starved with bytes: hand out those
            return filled(result)
        }
        guard end > start, let buffer else { return .end }
        return .bytes(UnsafeRawBufferPointer(start: buffer + start, count: end - start))
    }

    /// Consumes `count` of the bytes the last fill lent.
    public func consume(_ count: Int) {
        precondition(count >= 0 && count <= end - start, "consume: more than the buffered bytes")
        start += count
    }

    /// Copies up to `maxLength` bytes into `target`.
    public func read(into target: UnsafeMutableRawPointer, maxLength: Int, waiting: Bool = false) -> Read {
        guard maxLength > 0 else { return .bytes(0) }
        if let stop = discard(waiting: waiting) { return stop }
        if end == start && maxLength >= readSize && !reachedEnd {
            // Nothing buffered: straight from the upstream into the caller's buffer.
            let result = readUpstream(into: target, maxLength: min(maxLength, bufferSize), waiting: waiting)
            if case .bytes(let n) = result {
                base += Int64(end) + Int64(n)
                start = 0
                end = 0
                grow()
            }
            return result
        }
        switch fill(waiting: waiting) {
        case .bytes(let bytes):
            let n = min(maxLength, bytes.count)
            target.copyMemory(from: bytes.baseAddress!, byteCount: n)
            start += n
            return .bytes(n)
        case .end: return .end
        case .starved: return .starved
        case .failed(let error): return .failed(error)
        }
    }

    // MARK: - Offsets

    /// Moves so that the next byte handed out is the upstream's byte at `offset` (see
    /// "Offsets" above). Throws what the upstream's `seek(to:)` throws; a refused move
    /// changes nothing.
    public func seek(to target: Int64) throws(BlobStreamError) {
        guard target >= 0 else { throw BlobStreamError(.invalidOffset, "offset \(target) is negative") }
        guard !closed else { throw BlobStreamError(.closed, "the upstream reader is closed") }
        let bufferEnd = base + Int64(end)
        if target >= base && target <= bufferEnd {
            discardTarget = nil
            start = Int(target - base)
            return
        }
        if target > bufferEnd && source.offsetCapability != .seek {
            discardTarget = target // read and discarded at the next fill or read
            return
        }
        try source.seek(to: target)
        discardTarget = nil
        base = target
        start = 0
        end = 0
        reachedEnd = false
        readSize = minimumReadSize
    }

    // MARK: - Internals

    /// Reads and discards up to `discardTarget`; nil when done, or what to answer.
    private func discard(waiting: Bool) -> Read? {
        if let failure { return .failed(failure) }
        if closed { return fail(BlobStreamError(.closed, "the upstream reader is closed")) }
        guard let target = discardTarget else { return nil }
        while true {
            let remaining = target - (base + Int64(start))
            if remaining <= Int64(end - start) {
                start += Int(remaining)
                discardTarget = nil
                readSize = minimumReadSize
                return nil
            }
            start = end
            let result = reachedEnd ? .end : readIntoBuffer(waiting: waiting, wanted: 1)
            switch result {
            case .bytes: continue
            case .end:
                discardTarget = nil // `offset` is now the upstream's end
                return .end
            case .starved, .failed: return result
            }
        }
    }

    private func filled(_ result: Read) -> Filled {
        switch result {
        case .bytes: fatalError("not a stop")
        case .end: .end
        case .starved: .starved
        case .failed(let error): .failed(error)
        }
    }

    /// One upstream read into the buffer, after making room for `wanted` unconsumed bytes.
    private func readIntoBuffer(waiting: Bool, wanted: Int) -> Read {
        if buffer == nil { buffer = .allocate(byteCount: bufferSize, alignment: 64) }
        if start == end {
            base += Int64(end)
            start = 0
            end = 0
        } else if bufferSize - start < wanted || end == bufferSize {
            buffer!.copyMemory(from: buffer! + start, byteCount: end - start)
            base += Int64(start)
            end -= start
            start = 0
        }
        let result = readUpstream(into: buffer! + end, maxLength: min(readSize, bufferSize - end), waiting: waiting)
        if case .bytes(let n) = result {
            end += n
            grow()
        }
        return result
    }

    private func grow() { readSize = min(readSize * 2, bufferSize) }

    /// One read of the upstream, waiting for an asynchronous one when asked.
    private func readUpstream(into target: UnsafeMutableRawPointer, maxLength: Int, waiting: Bool) -> Read {
        if let failure { return .failed(failure) }
        while true {
            if closed || waiter.isCancelled { return fail(BlobStreamError(.closed, "closed while reading")) }
            if let error = source.error { return fail(error) }
            if source.isAtEnd {
                reachedEnd = true
                return .end
            }
            if !source.hasBytesAvailable && !(waiting && !isAsynchronous) {
                guard waiting else { return .starved }
                if source.completionContext.isCurrent {
                    return fail(
                        BlobStreamError(
                            .wouldDeadlock,
                            "the upstream has no bytes yet and announces them on the very thread that would wait for them"
                        ))
                }
                waiter.wait { self.isUpstreamReady }
                continue
            }
            let n = source.read(target.assumingMemoryBound(to: UInt8.self), maxLength: maxLength)
            if n > 0 { return .bytes(n) }
            if n < 0 {
                return fail(
                    source.error ?? BlobStreamError(.sourceFailed, "the upstream returned -1 without setting an error"))
            }
            // 0: the end, or an asynchronous upstream's "nothing yet" (contract rule 2).
            if isAsynchronous && !source.isAtEnd && source.error == nil && !source.hasBytesAvailable {
                continue
            }
            if let error = source.error { return fail(error) }
            reachedEnd = true
            return .end
        }
    }

    private func fail(_ error: any Error) -> Read {
        if failure == nil { failure = error }
        return .failed(failure!)
    }
}
