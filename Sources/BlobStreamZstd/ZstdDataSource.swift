import BlobStream
@_exported import BlobStreamCompression
import Foundation

/// A data source that decodes a zstd stream read from any upstream source: a file, a pipe,
/// an archive member, an object on the store, a source of your own.
///
/// ```swift
/// let zst = ZstdDataSource(upstream: FileDataSource(path: "/data/events.jsonl.zst"))
/// let stream = BlobInputStream(dataSource: zst)
/// ```
///
/// ## What it checks
/// - Every frame is decoded in turn: concatenated frames (`cat a.zst b.zst`, pzstd's
///   files) read as one stream; skippable frames (a seek table, metadata) are skipped.
/// - A frame's content checksum, when the frame has one (`zstd` writes one by default), is
///   checked at the frame's end. A frame written without one (`zstd --no-check`) is
///   UNPROTECTED: a changed byte in it can decode to other bytes with no error, as in a
///   plain tar. `framesWithoutChecksum` counts those met.
/// - The window a frame asks for is capped before the frame is decoded: at zstd's own
///   default, 2^27 bytes (`ZstdWindow.defaultLog`), unless `windowLog` allows more. A
///   larger one fails with `.unsupported`, naming the size and `--long=N`, as zstd's CLI
///   calls the option.
/// - Input that ends inside a frame (an empty input too) fails with `.truncated`; a damaged
///   frame, a checksum that does not match, and bytes after the last frame that are not a
///   frame fail with `.corrupt`. Each names the source and the compressed offset. Neither is
///   ever a clean end; errors are sticky.
///
/// The verified prefix (`verifiedPrefix`) is the end of the last frame decoded whole: a
/// frame's end is its check point, so a reader that stops inside a frame reads on to its
/// end before it reports success (`BlobInputStream.readOnToCheckPoint()`).
///
/// ## Offsets
/// `readOffset` and `seek(to:)` are offsets in the decompressed bytes (`offsetCapability`
/// is `.readAndDiscard`): moving forward decodes and discards; moving backward starts
/// again from the first byte, which needs an upstream that can move to offset 0 (refused
/// on a pipe). An offset past the end fails with `.invalidOffset` at the read that finds
/// the end. `length` is nil unless given to the initializer.
///
/// A file in zstd's seekable format (a seek table in a trailing skippable frame) on an
/// upstream that moves in constant time (a file, an object on the store) does better. At
/// the first read the table is read (`seekTable`) and checked: when it adds up and its
/// frames are all one size (`ZstdSeekTable.isRegular`), a move enters the frame that holds
/// the offset, and with `parallelism` over 1 the frames are decoded on that many threads,
/// each whole and checked (place, sizes, checksums) before any of its bytes is handed out;
/// a frame's end is then the check point. Otherwise (`seekTableNotUsed` says why) offsets
/// decode from the start, as above. A file in many frames without a table gets the same with
/// a `ZstdFrameIndex` (`frameIndex`; `blobstream index FILE.zst` writes `FILE.zst.zstidx`,
/// which the `zstd:` scheme of `BlobSources` finds beside the file or the object; a kept
/// copy of an object's index in an `IndexCache` that a read found `.corrupt` through is
/// removed from the cache, so that the next read asks the store again).
///
/// ## Ownership and threads
/// The source owns its upstream: `open()` opens it, `close()` (or deinitialization)
/// closes it, opened or not. Over a synchronous upstream (`.caller`: files, pipes, gzip,
/// archive members over those) everything happens inside the owner's calls. Over an
/// asynchronous one (a remote object) the open completes when the upstream announces its
/// own, on the upstream's context; then a `read` waits for the upstream's bytes (as an
/// archive member's does), unless it is called where the upstream announces
/// (`.wouldDeadlock`). `interrupt()` or `close()` from another thread ends the wait.
public final class ZstdDataSource: BlobDataSource, UpstreamOpenAnnouncing, @unchecked Sendable {
    // Unchecked Sendable: every mutable stored property, and `zstd` with the upstream reader
    // it reads, is guarded by `lock` (the frame index look-up too: its closure runs under it,
    // once); `state` is thread-safe itself; the rest is immutable.

    /// The URL scheme this source is registered under (by whoever registers it).
    public static let scheme = "zstd"

    /// The default size of the buffer compressed bytes are read into.
    public static let defaultInputBufferSize = 128 * 1024

    /// The observable state.
    public let state = BlobDataSourceState()

    /// The source of the compressed bytes; owned (opened and closed) by this source.
    public var upstream: any BlobDataSource { owned.reader.source }

    /// The name used in error messages.
    public let name: String

    /// The largest window (log2 of bytes) a frame may ask for.
    public let windowLog: Int

    private let knownLength: Int64?
    /// How many threads decode the frames of a seekable file at once.
    public let parallelism: Int
    /// The index of the file's frames used instead of a seek table: the one given to the
    /// initializer, or the one `findFrameIndex` found (at the first move, or when
    /// `lookUpFrameIndex()` asked); nil otherwise.
    public var frameIndex: ZstdFrameIndex? { lock.withLock { placement.frameIndex } }
    /// Why a frame index found beside the file was not used (it does not match the file,
    /// or is damaged), set by whoever looked for it; `blobstream cat --verbose` prints it.
    public var unusedIndexReason: String? {
        get { lock.withLock { placement.unusedIndexReason } }
        set { lock.withLock { placement.unusedIndexReason = newValue } }
    }
    /// The upstream, and whether it was started or closed (guarded by `lock`).
    private let owned: OwnedUpstream
    private let zstd: ZstdReader
    private let lock = NSLock()

    // MARK: Guarded by `lock`

    /// The seek table and the frame index: where frames are.
    private var placement: ZstdFramePlacement
    /// The decompressed offset of the next byte `read` hands out.
    private var target: Int64 = 0
    private var scratch: UnsafeMutableRawPointer?
    private static let scratchSize = 64 * 1024
    /// Frames decoded on several threads (a seekable file with a regular table).
    private var parallel: ZstdParallelStage
    /// Whether `dropCachedFrameIndex` removed (or looked at) the kept copy of the index.
    private var droppedCachedIndex = false

    /// Makes a source that decodes `upstream`.
    ///
    /// - Parameters:
    ///   - upstream: the compressed bytes, not opened yet; this source opens and closes it.
    ///   - length: the decompressed length when the caller knows it (reported as `length`).
    ///   - name: how errors name the source; by default `"zstd stream over <upstream type>"`.
    ///   - windowLog: the largest window a frame may ask for, as a power of 2 (10 to 31):
    ///     by default zstd's own limit, 27 (128 MiB). `zstd --long=N` files need N.
    ///   - inputBufferSize: how many compressed bytes one upstream read asks for.
    ///   - parallelism: how many threads decode the frames of a seekable file with a
    ///     regular seek table at once (see "Offsets"); by default the active cores. 1 decodes
    ///     on the caller's thread only.
    ///   - frameIndex: the file's frames as a `ZstdFrameIndex` recorded them, for a file in
    ///     many frames with no seek table of its own; used instead of looking for one. The
    ///     caller checks that it describes this upstream (`ZstdFrameIndex.lookUp`, which the
    ///     `zstd:` scheme of `BlobSources` uses, does). Each frame entered is still checked
    ///     against it.
    ///   - findFrameIndex: looks for the frame index (beside an object on a store, say) when
    ///     one is first needed: at the first move, or a read that could go on in parallel, so
    ///     that a read from the start asks for nothing more. A matching index is used as one
    ///     given; an unusable one is said in `unusedIndexReason`; an error fails the read.
    public init(
        upstream: any BlobDataSource, length: Int64? = nil, name: String? = nil,
        windowLog: Int = ZstdWindow.defaultLog, inputBufferSize: Int = ZstdDataSource.defaultInputBufferSize,
        parallelism: Int = ProcessInfo.processInfo.activeProcessorCount, frameIndex: ZstdFrameIndex? = nil,
        findFrameIndex: (() throws(BlobStreamError) -> IndexLookUp<ZstdFrameIndex>)? = nil
    ) {
        precondition(parallelism > 0, "parallelism must be positive")
        precondition(inputBufferSize > 0, "inputBufferSize must be positive")
        let name = name ?? "zstd stream over \(type(of: upstream))"
        let owned = OwnedUpstream(upstream, bufferSize: inputBufferSize, label: "BlobStreamZstd.ZstdDataSource.open")
        self.owned = owned
        self.name = name
        self.windowLog = windowLog
        self.knownLength = length
        self.parallelism = parallelism
        self.zstd = ZstdReader(upstream: owned.reader, name: name, windowLog: windowLog)
        self.parallel = ZstdParallelStage(workers: parallelism)
        self.placement = ZstdFramePlacement(name: name, frameIndex: frameIndex, findFrameIndex: findFrameIndex)
        owned.announce(to: self)
    }

    deinit {
        // The reader closes the upstream (opened or not) when it goes.
        scratch?.deallocate()
    }

    /// Frames met so far that carry no content checksum (their bytes are unprotected).
    public var framesWithoutChecksum: Int { lock.withLock { zstd.framesWithoutChecksum } }

    /// Frames decoded on other threads and handed out so far (see "Offsets"): 0 unless the
    /// upstream is a seekable file and a read went on past a whole frame.
    public var framesDecodedInParallel: Int {
        lock.withLock { parallel.framesHandedOut }
    }

    /// The upstream's seek table, once a move looked for it (see "Offsets"), or the frame
    /// index's frames; nil before, and for a file without either.
    public var seekTable: ZstdSeekTable? { lock.withLock { placement.seekTable } }

    /// Why moves decode from the start although the file ends with a seek table: it is
    /// damaged (it does not add up), or not regular (`ZstdSeekTable.isRegular`); nil
    /// otherwise.
    public var seekTableNotUsed: String? { lock.withLock { placement.seekTableNotUsed } }

    // MARK: - BlobDataSource

    /// The decompressed length given to the initializer, or nil.
    public var length: Int64? { knownLength }

    /// `.readAndDiscard`: forward by decoding and discarding, backward by starting again
    /// (when the upstream can move to offset 0).
    public var offsetCapability: BlobOffsetCapability { .readAndDiscard }

    /// `.caller` over a synchronous upstream; otherwise the upstream's context or this
    /// source's private queue (where the open is announced).
    public var completionContext: BlobCompletionContext { owned.completionContext }

    /// The end of the last frame decoded whole: every byte before it passed its frame's checks.
    public var verifiedPrefix: BlobVerifiedPrefix {
        lock.withLock { .checked(upTo: parallel.frames?.checkedUpTo ?? zstd.checkedUpTo) }
    }

    /// Opens the upstream; completes when the upstream has opened (at once for a
    /// synchronous upstream, later on its context otherwise).
    public func open() {
        let started = owned.start(locking: lock) { upstream in
            // A read that starts with a move looks for the seek table first: the object's end
            // beside the first request, and no large block from its start.
            guard target > 0, placement.frameIndex == nil, let object = upstream as? any BlobRangeReading else {
                return
            }
            object.expectRandomAccess()
            object.expectEnd(ZstdReader.seekTableTail)
        }
        if started { announceOpenIfReady() }
    }

    /// Decodes up to `maxLength` bytes into `buffer`.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        lock.lock()
        let n = readLocked(buffer, maxLength: maxLength)
        let failure = zstd.failure
        if n < 0, failure?.code == .corrupt { dropCachedFrameIndex() }
        lock.unlock()
        state.announceRead(n, failure: failure, name: name)
        return n
    }

    private func readLocked(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard owned.isReadable, zstd.failure == nil else { return -1 }
        guard maxLength > 0 else { return 0 }
        // A read that went on past a whole frame goes on in parallel (a short read stays on
        // the caller's thread, decoding one frame).
        if parallel.frames == nil && zstd.framesDecoded > 0 && zstd.isBetweenFrames && target == zstd.produced
            && !parallel.startIfWorth(at: target, zstd, &placement)
        {
            return -1
        }
        if let frames = parallel.frames {
            switch frames.read(into: buffer, capacity: maxLength) {
            case .bytes(let n):
                target += Int64(n)
                return n
            case .end: return 0
            case .failed(let error):
                zstd.record(error)
                return -1
            }
        }
        if target != zstd.produced && !placement.enter(target, zstd) { return -1 }
        // Forward to `target`: decode and discard.
        while zstd.produced < target {
            if scratch == nil { scratch = .allocate(byteCount: Self.scratchSize, alignment: 16) }
            let wanted = Int(min(Int64(Self.scratchSize), target - zstd.produced))
            switch zstd.decode(into: scratch!, capacity: wanted) {
            case .bytes: continue
            case .end:
                zstd.record(
                    BlobStreamError(
                        .invalidOffset, "\(name): offset \(target) is past the end (\(zstd.produced) bytes)"))
                return -1
            case .failed: return -1
            }
        }
        switch zstd.decode(into: buffer, capacity: maxLength) {
        case .bytes(let n):
            target += Int64(n)
            return n
        case .end: return 0
        case .failed: return -1
        }
    }

    /// After a `.corrupt` failure: when the frame index in use is a copy kept in an
    /// `IndexCache` (its file is one of the cache's entries), removes that copy, so that the
    /// next read asks the store for its index again (which may have been fixed) instead of
    /// failing on the same copy until the object itself changes. A damaged frame with an
    /// honest index costs only that request. Under `lock`, once.
    private func dropCachedFrameIndex() {
        guard !droppedCachedIndex, let path = placement.frameIndex?.name,
            IndexCache.isEntryName((path as NSString).lastPathComponent)
        else { return }
        droppedCachedIndex = true
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Lends decoded bytes instead of copying them, while frames are decoded on other threads
    /// (see "Offsets"): the rest of the current frame, consumed, valid until the next call.
    /// False otherwise, and at the end or on a failure (`read` then says which).
    public func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>
    ) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard owned.isReadable, zstd.failure == nil, let frames = parallel.frames else { return false }
        switch frames.lend() {
        case .bytes(let bytes):
            target += Int64(bytes.count)
            buffer.pointee = UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            length.pointee = bytes.count
            return true
        case .end: return false
        case .failed(let error):
            zstd.record(error)
            if error.code == .corrupt { dropCachedFrameIndex() }
            return false
        }
    }

    /// Looks for the frame index now when `findFrameIndex` was given and has not run (a
    /// blocking call: on the thread that reads, after `open()`), and returns the one in use.
    /// What `blobstream cat --verbose` asks before it reads.
    ///
    /// - Throws: what `findFrameIndex` threw (the source has failed with it).
    public func lookUpFrameIndex() throws(BlobStreamError) -> ZstdFrameIndex? {
        lock.lock()
        defer { lock.unlock() }
        guard placement.findFrameIndexIfAsked(zstd) else {
            throw zstd.failure ?? BlobStreamError(.sourceFailed, "\(name): failed")
        }
        return placement.frameIndex
    }

    /// The decompressed offset of the next byte.
    public var readOffset: Int64? { lock.withLock { target } }

    /// Moves to a decompressed offset (see "Offsets" above): the next `read` decodes there.
    /// A move back starts again from the first compressed byte, at once: refused (and
    /// nothing changed) where the upstream cannot move to its start (a pipe).
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else { throw BlobStreamError(.invalidOffset, "\(name): offset \(offset) is negative") }
        lock.lock()
        let outcome = seekLocked(offset)
        lock.unlock()
        switch outcome {
        case .failure(let refusal): throw refusal
        case .success(let reopensEnd):
            if reopensEnd {
                state.isAtEnd = false
                state.hasBytesAvailable = true
            }
        }
    }

    /// Whether the move leaves an announced end (the stream must read again); or the refusal.
    private func seekLocked(_ offset: Int64) -> Result<Bool, BlobStreamError> {
        if owned.isClosed { return .failure(BlobStreamError(.closed, "\(name): closed")) }
        if let failure = zstd.failure {
            return .failure(
                BlobStreamError(
                    .invalidOffset, "\(name): cannot move to offset \(offset): the source failed (\(failure.message))"))
        }
        if let knownLength, offset > knownLength {
            return .failure(
                BlobStreamError(
                    .invalidOffset, "\(name): cannot move to offset \(offset): past the end (\(knownLength) bytes)"))
        }
        if parallel.frames != nil {
            // The next read starts again at the new offset's frame.
            parallel.stop()
            target = offset
            return .success(owned.isSettled)
        }
        if owned.isStarted && offset < zstd.produced {
            do {
                try zstd.restart()
            } catch {
                return .failure(
                    BlobStreamError(
                        .invalidOffset, "\(name): cannot move back to offset \(offset): \(error.message)", cause: error)
                )
            }
        }
        target = offset
        return .success(owned.isSettled && !(zstd.isFinished && target == zstd.produced))
    }

    /// Passes the interruption on to the upstream, where a read may be blocked.
    public func interrupt() {
        owned.interrupt()
    }

    /// Closes the upstream and frees libzstd's state. Further reads return −1.
    public func close() {
        owned.close(locking: lock) {
            parallel.stop()
            zstd.end()
            scratch?.deallocate()
            scratch = nil
        }
    }

    // MARK: - Opening

    /// Announces the open (or the upstream's failure to open) once the upstream's is done.
    func announceOpenIfReady() {
        lock.lock()
        var outcome = owned.outcome(name: name)
        if case .failed(let error) = outcome { outcome = .failed(zstd.record(error)) }
        lock.unlock()
        outcome.announce(on: state)
    }
}

extension ZstdDataSource: BlobReadReporting {
    /// Whether the file is entered through a frame index (and how many frames it has), or
    /// through its own seek table or a read from its start; an index found but not used, with
    /// why. The index beside a remote object is otherwise looked for at the first move: this
    /// looks for it now (`lookUpFrameIndex()`, a blocking call, on the thread that reads).
    public var readingNote: String? {
        let how =
            ((try? lookUpFrameIndex()) ?? nil).map {
                "entered through its frame index (\($0.frames.frames.count) frames)"
            }
            ?? "no frame index (a seekable file is entered through its own seek table, another read from its start)"
        return how + (unusedIndexReason.map { "; an index was found but not used: \($0)" } ?? "")
    }
}
