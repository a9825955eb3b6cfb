import BlobStream
@_exported import BlobStreamCompression
import Foundation

/// A data source that inflates a gzip stream read from any upstream source: a file, a file
/// handle or pipe, an archive member, a source of your own.
///
/// ```swift
/// let gz = GzipDataSource(upstream: FileDataSource(path: "/var/log/syslog.1.gz"))
/// let stream = BlobInputStream(dataSource: gz)
/// ```
///
/// ## What it checks
/// - Every member of a multi-member file (`cat a.gz b.gz`) is inflated in turn; headers with
///   FEXTRA, FNAME, FCOMMENT and FHCRC are accepted and the header CRC is checked.
/// - Every member's CRC-32 and ISIZE are checked.
/// - Input that ends before the last member's trailer (including an empty input) fails with
///   `.truncated`; bad magic, a bad header CRC, a bad CRC-32 or ISIZE and corrupt deflate
///   data fail with `.corrupt` and the engine's error (`ZlibError`, `IsalError`) as the cause. Both name the source and the
///   offset in the compressed bytes. Neither is ever a clean end; errors are sticky.
/// - Trailing bytes after the last member: zero bytes are ignored, as `gzip -d` does (tape
///   and block padding); anything else fails with `.corrupt` (never silently ignored).
///
/// ## Ownership
/// The gzip source owns its upstream (unlike Go's `gzip.Reader`): its `open()` opens the
/// upstream, its `close()` (or its deinitialization) closes it, opened or not. Hand it an
/// unopened upstream and do not call the upstream yourself afterwards. It reads the upstream
/// through the core's `BlobUpstreamReader`; the decoding (the sequential decoder, the walker
/// from a seek point, the parallel reader, behind one strategy) is the compression kit's
/// (`BlobStreamCompression`), which the archive module's tar.gz members use too.
///
/// ## Engines
/// `engine` (`InflateEngine`) picks the inflater: by default ISA-L when it can be
/// loaded at run time (`libisal.so.2`), else zlib. Both check the same things and fail with
/// the same codes and words; the cause is a `ZlibError` or an `IsalError`.
///
/// ## Offsets
/// `readOffset`, `seek(to:)` and `.fileCurrentOffsetKey` are offsets in the decompressed
/// bytes (`offsetCapability` is `.readAndDiscard`): moving forward inflates and discards;
/// moving backward restarts from the first byte, which needs an upstream that can move to
/// offset 0 (a file, an in-memory source) and is refused otherwise (a pipe). An offset past the end fails
/// with `.invalidOffset` at the read that finds the end. `length` is nil (a gzip trailer
/// only holds each member's size modulo 2³²) unless given to the initializer.
///
/// With a `GzipIndex` (`index:`, over a synchronous upstream) `offsetCapability` is `.seek`:
/// a move jumps to the nearest seek point at or before the offset and decodes forward; every
/// chunk decoded whole is checked against the index's CRC-32 (`.changed` on a mismatch), and
/// `length` is the index's uncompressed size.
///
/// ## Parallel decoding
/// With an index that BlobStream built (it has every chunk's CRC-32) over a synchronous
/// upstream that can seek, reads decode on `parallelism` threads (by default the number of
/// active cores): the source reads the compressed bytes of the next chunks through its
/// upstream, worker threads each decode a few chunks whole (zlib, resuming from the seek
/// point's window) and check them against the index, and `read` hands the bytes out in
/// order once their chunks are checked, so a corrupt chunk fails (`.changed`, naming its
/// offsets) before any of its bytes are delivered. The trailer of every member that starts
/// and ends inside a job is checked too. At most 16 MiB of chunks are in flight; an index
/// with a chunk longer than 16 MiB, a foreign index, or `parallelism: 1` read sequentially.
/// `close()` and `interrupt()` stop the threads (a read waiting for them fails with `.closed`).
///
/// ## Asynchronous upstreams
/// Over an upstream that announces bytes later (`completionContext` other than `.caller`:
/// a network source, a scripted test source), the source completes its open when the
/// upstream does and inflates ahead into a 64 KiB buffer so that `hasBytesAvailable` is
/// true only when a `read` really has bytes to hand out (a `read` must never return 0 before
/// the end, and must never wait). It reacts to the upstream's announcements on a private
/// queue, which its `completionContext` covers together with the upstream's. Over a
/// synchronous upstream (`.caller`) it inflates straight into the caller's buffer.
public final class GzipDataSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: every mutable stored property, and `gzip` with the upstream
    // reader it reads, is guarded by `lock`; `state` is thread-safe itself; the rest is
    // immutable.

    /// The URL scheme this source is registered under (by whoever registers it).
    public static let scheme = "gzip"

    /// The default size of the buffer compressed bytes are read into.
    public static let defaultInputBufferSize = 128 * 1024

    /// The observable state.
    public let state = BlobDataSourceState()

    /// The source of the compressed bytes; owned (opened and closed) by this source.
    public var upstream: any BlobDataSource { reader.source }

    /// The name used in error messages.
    public let name: String

    let knownLength: Int64?
    /// The upstream, read through the kit's reader (buffered, moved, observed).
    let reader: BlobUpstreamReader
    /// Inflate ahead into `lookahead` (asynchronous upstream) instead of into the caller's
    /// buffer.
    var buffered: Bool { reader.isAsynchronous }
    /// Where the source reacts to an asynchronous upstream's announcements.
    private let probeQueue: DispatchQueue
    let lock = NSLock()
    let announceLock = NSRecursiveLock()

    // MARK: Guarded by `lock`

    /// The decoding: the strategy in use (sequential, through the index, parallel), the
    /// decompressed offset of the next byte (`gzip.target`), the sticky failure.
    let gzip: GzipReader
    var started = false
    /// What `state` should say; `publish()` copies it there with no lock held.
    var desired = BlobDataSourceStatus() { didSet { desiredGeneration &+= 1 } }
    var desiredGeneration = 0
    var closed = false
    var failure: BlobStreamError?
    /// See `unusedIndexReason`.
    var unusedIndex: String?

    static let lookaheadCapacity = 64 * 1024
    /// Bytes inflated ahead of the reads (asynchronous upstream): `lookahead[lookStart..<lookEnd]`
    /// start at `gzip.target`.
    var lookahead: UnsafeMutablePointer<UInt8>?
    var lookStart = 0, lookEnd = 0
    var lookCount: Int { lookEnd - lookStart }

    /// The engine that inflates: `.isal` or `.zlib` (`.automatic` resolved when the source
    /// was made). A source asked for `.isal` where ISA-L is unavailable fails at open.
    public let engine: InflateEngine

    /// Makes a source that inflates `upstream`.
    ///
    /// - Parameters:
    ///   - upstream: the compressed bytes, not opened yet; this source opens and closes it.
    ///   - length: the decompressed length when the caller knows it (reported as `length`);
    ///     nil by default.
    ///   - name: how errors name the source; by default `"gzip stream over <upstream type>"`.
    ///   - inputBufferSize: how many compressed bytes one upstream read asks for.
    ///   - index: a seek-point index of these compressed bytes (see `GzipIndex`): with it,
    ///     over a synchronous upstream that can seek, moves jump to the nearest seek point
    ///     (`offsetCapability` is `.seek`) and every chunk decoded whole is checked against
    ///     its CRC-32. Check that it matches the file first (`GzipIndex.lookUp`).
    ///   - buildsIndex: build a `GzipIndex` (with `indexSpacing`) while the bytes are read
    ///     from the start (synchronous upstream, no `index` given); `builtIndex` holds it
    ///     once a read reached the end cleanly. A move backward or an error drops it.
    ///   - indexSpacing: the spacing of the index built.
    ///   - engine: which inflater to use: by default ISA-L when it can be loaded, else zlib;
    ///     `.isal` where ISA-L is unavailable fails at open with `.unsupported`.
    ///   - parallelism: with an `index` (over a synchronous upstream that can seek), how many
    ///     threads decode the chunks between seek points at once (see "Parallel decoding");
    ///     by default `GzipDataSource.defaultParallelism`; 1 decodes on the caller's thread.
    ///   - acceptsUncheckedIndex: use an `index` without chunk CRC-32s (a foreign GZIDX that
    ///     was not adopted with `GzipIndex.adopt(_:forFileAtPath:)`). Reads through such an
    ///     index are UNVERIFIED: a chunk decoded from one of its seek points is checked by
    ///     nothing, so a wrong point or a changed file gives wrong bytes with a clean end.
    ///     False by default: the source then fails at open with `.unsupported`.
    public convenience init(
        upstream: any BlobDataSource, length: Int64? = nil, name: String? = nil,
        inputBufferSize: Int = GzipDataSource.defaultInputBufferSize, index: GzipIndex? = nil,
        buildsIndex: Bool = false, indexSpacing: Int = GzipIndex.defaultSpacing,
        engine: InflateEngine = .automatic, parallelism: Int = GzipDataSource.defaultParallelism,
        acceptsUncheckedIndex: Bool = false
    ) {
        self.init(
            upstream: upstream, length: length, name: name, inputBufferSize: inputBufferSize, index: index,
            buildsIndex: buildsIndex, indexSpacing: indexSpacing, engine: engine, isal: .system,
            parallelism: parallelism, acceptsUncheckedIndex: acceptsUncheckedIndex)
    }

    /// The default `parallelism`: the number of active cores, at most 8.
    public static var defaultParallelism: Int { GzipReader.defaultParallelism }

    /// Makes a source as the public initializer does, with ISA-L's availability given (tests
    /// make it unavailable to exercise that path).
    package init(
        upstream: any BlobDataSource, length: Int64? = nil, name: String? = nil,
        inputBufferSize: Int = GzipDataSource.defaultInputBufferSize, index: GzipIndex? = nil,
        buildsIndex: Bool = false, indexSpacing: Int = GzipIndex.defaultSpacing, engine: InflateEngine,
        isal: IsalAvailability, parallelism: Int = GzipDataSource.defaultParallelism,
        acceptsUncheckedIndex: Bool = false
    ) {
        precondition(indexSpacing > 0, "indexSpacing must be positive")
        precondition(parallelism > 0, "parallelism must be positive")
        precondition(inputBufferSize > 0, "inputBufferSize must be positive")
        let name = name ?? "gzip stream over \(type(of: upstream))"
        let owner = WeakGzipSource()
        let probeQueue = DispatchQueue(label: "BlobStreamGzip.GzipDataSource.probe")
        let reader = BlobUpstreamReader(upstream, bufferSize: inputBufferSize) {
            probeQueue.async { owner.source?.upstreamChanged() }
        }
        self.knownLength = length ?? index.map(\.uncompressedSize)
        self.name = name
        self.probeQueue = probeQueue
        self.reader = reader
        self.engine = engine.resolved(with: isal)
        self.gzip = GzipReader(
            upstream: reader, name: name, index: index, indexSpacing: buildsIndex ? indexSpacing : nil,
            engine: engine, isal: isal, parallelism: parallelism, acceptsUncheckedIndex: acceptsUncheckedIndex)
        owner.source = self
    }

    deinit {
        // The reader closes the upstream (opened or not) when it goes.
        gzip.interrupt()
        lookahead?.deallocate()
    }

    // MARK: - BlobDataSource

    /// The decompressed length given to the initializer, or nil.
    public var length: Int64? { knownLength }

    /// `.readAndDiscard`: forward by inflating and discarding, backward by restarting (when
    /// the upstream can move to offset 0).
    public var offsetCapability: BlobOffsetCapability { gzip.index == nil ? .readAndDiscard : .seek }

    /// `.caller` over a synchronous upstream; otherwise the upstream's context or this
    /// source's private queue.
    public var completionContext: BlobCompletionContext { reader.completionContext.including(probeQueue) }

    /// Opens the upstream; completes when the upstream has opened (at once for a
    /// synchronous upstream, later on its queue otherwise).
    public func open() {
        lock.lock()
        openLocked()
        lock.unlock()
        publish()
    }

    private func openLocked() {
        guard !started, !closed else { return }
        started = true
        guard gzip.prepare() else { return fail() }
        reader.open()
        guard gzip.begin(upstreamOpened: reader.isOpenCompleted) else { return fail() }
        finishOpenIfReady()
    }

    /// Inflates up to `maxLength` bytes into `buffer`.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        lock.lock()
        let n = readLocked(buffer, maxLength: maxLength)
        let error = failure
        lock.unlock()
        // The stream looks at the state as soon as this returns: a 0 comes with the end and
        // a -1 with the error (both final, so set at once; `publish` brings the rest).
        if n == 0 {
            state.isAtEnd = true
        } else if n < 0, let error {
            state.error = error
        }
        publish()
        return n
    }

    private func readLocked(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard !closed, started, failure == nil, maxLength > 0 else { return failure == nil && maxLength <= 0 ? 0 : -1 }
        if lookCount > 0 {
            let n = min(maxLength, lookCount)
            buffer.update(from: lookahead! + lookStart, count: n)
            lookStart += n
            gzip.target += Int64(n)
            refreshAvailability()
            return n
        }
        switch gzip.decode(into: buffer, capacity: maxLength) {
        case .bytes(let n):
            gzip.target += Int64(n)
            refreshAvailability()
            return n
        case .end:
            desired.isAtEnd = true
            desired.hasBytesAvailable = false
            return 0
        case .failed:
            fail()
            return -1
        case .starved:
            fail(gzip.errors.starvedRead(at: gzip.compressedOffset))
            return -1
        }
    }

    /// The decompressed offset of the next byte.
    public var readOffset: Int64? {
        lock.lock()
        defer { lock.unlock() }
        return gzip.target
    }

    /// Moves to a decompressed offset (see "Offsets" above).
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else { throw BlobStreamError(.invalidOffset, "\(name): offset \(offset) is negative") }
        lock.lock()
        let refusal = seekLocked(offset)
        lock.unlock()
        publish()
        if let refusal { throw refusal }
    }

    private func seekLocked(_ offset: Int64) -> BlobStreamError? {
        let errors = gzip.errors
        if closed { return BlobStreamError(.closed, "\(name): closed") }
        if let failure { return errors.refusedOffset(offset, "the source failed (\(failure.message))") }
        if let knownLength, offset > knownLength {
            return errors.refusedOffset(offset, "past the end (\(knownLength) bytes)")
        }
        guard started else {
            gzip.target = offset // nothing inflated yet: the first reads discard up to here
            return nil
        }
        let before = gzip.target
        do {
            switch try gzip.move(to: offset, keepingFrom: lookCount > 0 ? before : gzip.produced) {
            case .forward where lookCount > 0 && offset <= gzip.produced:
                lookStart += Int(offset - before)
            case .forward, .jumped, .restarted:
                lookStart = 0
                lookEnd = 0
            }
        } catch {
            return error
        }
        guard desired.isOpenCompleted else { return nil }
        if desired.isAtEnd && !(gzip.isFinished && lookCount == 0 && gzip.target == gzip.produced) {
            desired.isAtEnd = false
        }
        refreshAvailability()
        return nil
    }

    /// Passes the interruption on to the upstream, where a read may be blocked, and to the
    /// decoding threads (a read waiting for them fails with `.closed`).
    public func interrupt() {
        gzip.interrupt()
        reader.interrupt()
    }

    /// Closes the upstream and frees zlib's state and the buffers. Further reads return −1.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        gzip.end()
        reader.close() // owned, opened or not; stops observing it
        lookahead?.deallocate()
        lookahead = nil
        lookStart = 0
        lookEnd = 0
    }
}
