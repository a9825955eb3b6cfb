import BlobStream
import Foundation
import Synchronization

/// A data source that streams one asset of an `AssetLibrary`, by URL: the original iOS
/// library's photo-library source.
///
/// ```swift
/// let library = DirectoryAssetLibrary(root: URL(fileURLWithPath: "/data/Library"))
/// let source = AssetDataSource(url: "assets-library://asset/asset.JPG?id=…&ext=JPG", library: library)
/// let stream = BlobInputStream(dataSource: source)
/// stream.open()   // waits for the lookup, on another thread than library.callbackQueue
/// ```
///
/// - **Open** is asynchronous: `open()` starts the lookup (on `openQueue` when given,
///   otherwise inside the call) and returns; the library answers on its `callbackQueue`,
///   where the source fills its cache and then announces `isOpenCompleted` and, at
///   once, `hasBytesAvailable` (or `isAtEnd` for an empty asset). `completionContext` is
///   that queue (and `openQueue`), so a synchronous stream opened or read there fails at
///   once (`.wouldDeadlock`) instead of waiting forever.
/// - **Renditions**: `.current` (the default) streams the edited rendition when the asset
///   has one, the original otherwise; `.original` always the original. `rendition` tells
///   which one is streamed once open; the choice made at open holds to the end.
/// - **Block cache**: the source asks the representation for whole blocks of `blockSize`
///   bytes (aligned on multiples of it; the asset's last block may be short), never for a
///   block twice in a row, so `getBytes` runs at most ceil(size / blockSize) times for a
///   read from start to end whatever the read sizes (plus, before the end, the
///   representation's `checkValid()`: no `getBytes` for ``DirectoryAssetLibrary``'s; the
///   protocol's default asks `getBytes` for a byte at `size`, which reads nothing). A read
///   with room for whole blocks at a block boundary gets them straight from one `getBytes`
///   into its buffer, without a copy; other reads are served from a cache of `cachedBlocks` blocks, filled by one
///   `getBytes`. A `read` takes no lock and allocates nothing.
/// - **Invalidation** (the library changed): reading goes on at the same offset, without a
///   lost or repeated byte, after looking the asset up again and checking that every byte
///   already handed out is the same in the version found — unless its size or rendition
///   changed meanwhile, or a byte already handed out is different, which is an error
///   (`.changed`, naming the URL and the offset) rather than a splice of two versions. See
///   "Reading across an invalidation" below.
/// - **The end** is announced (`isAtEnd`) only after the representation read from was
///   found still valid (`checkValid()`); when it is not, the asset is looked up again and
///   checked as after an invalidation: the same bytes end cleanly, other bytes are
///   `.changed`. So a change made after the last `getBytes` does not end as a clean read.
/// - `verifiesDeliveredBytes: false` turns the check of the bytes off (see "What was read
///   belongs to the version read on").
/// - `.fileCurrentOffsetKey` (`offsetCapability` `.seek`): before `open()` where reading
///   starts (past the end: the open fails with `.invalidOffset`); after, moves there (within
///   the cache: no `getBytes`).
/// - Errors are `BlobStreamError`s naming the URL: the library's lookup errors (`.notFound`
///   for an unknown id or a missing library, `.malformedURL`), `.changed`, `.ioFailed`, and
///   `.invalidated` when the library kept invalidating (8 times in a row without a block
///   read).
///
/// ## Reading across an invalidation
///
/// An invalidation is only discovered by `getBytes`, inside a `read`, and the read may not
/// wait for the new lookup (rule 2). The read returns the bytes it already has (none is
/// handed out past them), drops `hasBytesAvailable`, and starts the lookup; with no byte
/// to return it returns 0 with `isAtEnd` false, which the stream takes as "nothing yet"
/// (rule 2's exception) and waits. The lookup's answer checks the bytes already handed out
/// (see below), refills the cache at the same offset on the callback queue and only then
/// announces `hasBytesAvailable` again. The open reads the first cache fill the same way,
/// so an invalidation right after open is absorbed before any byte is promised. Moving
/// with `.fileCurrentOffsetKey` outside the cache reads there inside `setProperty`, on the
/// same terms.
///
/// Like every source, `open`, `read`, `setProperty` and `close` come from one owner at a
/// time (a `BlobInputStream`); announcements come from the library's callback queue too.
///
/// ## What was read belongs to the version read on
///
/// The source keeps a hash of every byte it hands out (per run: from the open, or a move
/// with `.fileCurrentOffsetKey`, to the next move). When the lookup after an invalidation
/// finds the asset, the source reads all those bytes again from the version found — whole
/// aligned blocks, through the cache — and compares their hash with the one it kept:
///
/// - **Equal**: reading goes on there. Every byte handed out, before and after, is then a
///   byte of that version: a change that only touched bytes not handed out yet is read from
///   the new version, and a rewrite with the same bytes changes nothing.
/// - **Different**: `.changed`, naming the URL, the range read before and the offset, even
///   when the size, the modification time and the fingerprint stayed as they were (a
///   rewrite in place restoring the mtime, as `touch -r` does).
/// - A **size** or **rendition** that changed is `.changed` at once, without re-reading:
///   the length announced at open has to hold.
///
/// Why re-read rather than trust metadata: the fingerprint is the library's best effort
/// (``DirectoryAssetLibrary`` hashes samples of large files; a library that knows files by
/// size and mtime cannot see a same-size rewrite), and a file's identity (inode, size,
/// ctime, which users cannot set) cannot prove its bytes unchanged either: a write in the
/// same clock tick as the lookup leaves ctime as it was, writes through a shared mapping to
/// a page already dirty move no timestamp, and a clock set back can repeat a ctime. The
/// hash is XXH64: a change nobody crafted goes unseen with a probability of about 2⁻⁶⁴
/// (it detects changes, it does not authenticate). The check runs when the library reports
/// a change (an invalidation, seen by a `getBytes` or by the check before the end); a change
/// the library never reports is not seen.
///
/// **Opting out.** `verifiesDeliveredBytes: false` neither hashes nor re-reads: after an
/// invalidation (or before the end) the version found must have the size and the
/// fingerprint of the one opened, or the read fails with `.changed`. It does NOT verify the
/// bytes: a rewrite that keeps the fingerprint (same size and mtime with a library that
/// knows files by them, or a change between ``DirectoryAssetLibrary``'s fingerprint
/// samples) can splice two versions. Use it only with a library that never rewrites an
/// asset in place.
///
/// **Cost.** While reading: the hash of each byte handed out, about 45 ms of CPU per GiB
/// (measured with a release build reading a 1 GiB asset 4 times from the page cache with
/// 64 KiB reads, on a 2-core AMD EPYC virtual machine: 0.37 s of CPU without the hash,
/// 0.56 s with it; `cat` of the same 4 GiB took 0.30 s). That is half again the CPU of a
/// read from the page cache, and little next to reading from a disk or a network. On
/// resume: a read of everything handed out so far (900 MiB of a 1 GiB asset took about
/// 0.2 s from the page cache; from a disk, the disk's time to read it), on the library's
/// callback queue (the library's other answers wait for it); `close()` stops it at the
/// next block. Nothing is re-read for an invalidation found before any byte was handed
/// out. A library that keeps changing faster than that re-read makes the source give up
/// with `.invalidated` after 8 lookups in a row. Before the end: one `checkValid()` (for
/// ``DirectoryAssetLibrary``, one `fstat`), and the re-read only when the asset changed.
/// `verifiesDeliveredBytes: false` saves the hash and the re-reads: measured again the
/// same way on a loaded machine, 0.45 s of CPU (0.69 s elapsed) instead of 0.64 s (0.99 s).
public final class AssetDataSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: the fields below `lock` are guarded by it while a lookup is under
    // way; while none is (phase `.ready`), only the owner's serialized calls touch them, and
    // a lookup is only started by the owner and ends by announcing `hasBytesAvailable`.

    /// 64 KiB: the buffer size of most stream readers, so that their reads skip the cache.
    public static let defaultBlockSize = 64 << 10

    /// 16: a cache of 1 MiB with the default block size, so that small reads cost one
    /// `getBytes` per MiB.
    public static let defaultCachedBlocks = 16

    /// What the source did, for tests and benchmarks.
    public struct Statistics: Sendable, Equatable {
        /// Lookups made: one for the open, one more after each invalidation.
        public var lookups: Int
        /// `getBytes` calls made for blocks (not the one the default `checkValid()` makes).
        public var getBytesCalls: Int
        /// `.invalidated` answers from `getBytes`, or from `checkValid()` before the end.
        public var invalidations: Int
        /// Bytes already handed out that were read again after an invalidation, to check
        /// them against the version found by the new lookup (see "What was read belongs to
        /// the version read on").
        public var recheckedBytes: Int

        /// Makes a value (to compare with).
        public init(lookups: Int, getBytesCalls: Int, invalidations: Int, recheckedBytes: Int = 0) {
            self.lookups = lookups
            self.getBytesCalls = getBytesCalls
            self.invalidations = invalidations
            self.recheckedBytes = recheckedBytes
        }
    }

    /// The observable state.
    public let state = BlobDataSourceState()
    /// The asset's URL, as given.
    public let url: String
    /// The library that looks it up.
    public let library: any AssetLibrary
    /// The rendition asked for.
    public let renditionChoice: AssetRenditionChoice
    /// The unit of `getBytes`: whole, aligned blocks of this size.
    public let blockSize: Int
    /// The blocks the cache holds (and one `getBytes` fills) for reads smaller than a block.
    public let cachedBlocks: Int
    /// Where lookups are started (nil: inside `open()` and inside the read that found an
    /// invalidation).
    public let openQueue: DispatchQueue?
    /// Where announcements come from: the library's callback queue, and `openQueue`.
    public let completionContext: BlobCompletionContext
    /// Whether the bytes handed out are hashed and, after an invalidation or before the end
    /// when the asset changed, read again and compared with the version found (the default;
    /// see "What was read belongs to the version read on"). When false, the source only
    /// compares the size and the fingerprint of the version found with those at open: it
    /// does NOT verify the bytes, so a rewrite that keeps the fingerprint can splice two
    /// versions.
    public let verifiesDeliveredBytes: Bool

    private enum Phase { case idle, opening, ready, looking, failed, closed }

    private enum Fill {
        case filled
        case invalidated
        case failed(BlobStreamError)
    }

    /// The largest number of invalidations in a row (without a block read in between)
    /// before giving up.
    static let maxAttempts = 8

    private let lock = NSLock()
    private var phase = Phase.idle
    private var representation: (any AssetRepresentation)?
    private var size: Int64 = 0
    private var fingerprint = "" // at open, compared on resume when verifiesDeliveredBytes is false
    private var opened: (rendition: AssetRendition, filename: String, uti: String)?
    private var attempts = 0

    // The cursor. `position` is written only by the owner's calls.
    private var position: Int64 = 0
    private var cache: UnsafeMutableRawPointer? // cacheSize bytes, holding [cacheStart, cacheEnd)
    private var cacheStart: Int64 = 0
    private var cacheEnd: Int64 = 0

    // What was handed out, for the check on resume: the run being read, from `runStart` to
    // `position`, hashed as it is handed out; and the runs read before moves with
    // `.fileCurrentOffsetKey`. Written only by the owner's calls (and read with `lock` held
    // by a lookup's answer, while no read runs).
    private var runStart: Int64 = 0
    private var runHash = DeliveredHash()
    private var earlierRuns: [DeliveredRun] = []

    /// Bytes handed out from `start` to `end`, and their hash.
    private struct DeliveredRun {
        var start: Int64, end: Int64, digest: UInt64
    }

    /// Set by `close()` before it takes the lock, so that a recheck under way stops.
    private let closing = Atomic<Bool>(false)
    private let lookupCount = Atomic<Int>(0)
    private let getBytesCount = Atomic<Int>(0)
    private let invalidationCount = Atomic<Int>(0)
    private let recheckedCount = Atomic<Int>(0)

    /// Makes a source for the asset `url` names in `library`; nothing happens until `open()`.
    ///
    /// - Parameters:
    ///   - url: `assets-library://asset/asset.JPG?id=ID&ext=JPG`.
    ///   - library: resolves the URL.
    ///   - rendition: `.current` (edited when there is one) or `.original`.
    ///   - blockSize: the unit `getBytes` asks for (> 0); reads with room for a block at a
    ///     block boundary skip the cache.
    ///   - cachedBlocks: how many blocks the cache holds for smaller reads (> 0).
    ///   - openQueue: where to start lookups; nil starts them on the calling thread.
    ///   - verifiesDeliveredBytes: true (the default) checks the bytes handed out against
    ///     the version found after a change (a hash while reading, a re-read after the
    ///     change); false trusts the library's size and fingerprint instead, for a library
    ///     that never rewrites an asset in place: it does NOT verify, and a rewrite that
    ///     keeps the fingerprint can splice two versions.
    public init(
        url: String, library: any AssetLibrary, rendition: AssetRenditionChoice = .current,
        blockSize: Int = AssetDataSource.defaultBlockSize, cachedBlocks: Int = AssetDataSource.defaultCachedBlocks,
        openQueue: DispatchQueue? = nil, verifiesDeliveredBytes: Bool = true
    ) {
        precondition(blockSize > 0, "blockSize must be positive")
        precondition(cachedBlocks > 0, "cachedBlocks must be positive")
        self.url = url
        self.library = library
        self.renditionChoice = rendition
        self.blockSize = blockSize
        self.cachedBlocks = cachedBlocks
        self.openQueue = openQueue
        self.verifiesDeliveredBytes = verifiesDeliveredBytes
        let callback = library.callbackQueue
        if let openQueue {
            completionContext = .custom {
                BlobCompletionContext.queue(callback).isCurrent || BlobCompletionContext.queue(openQueue).isCurrent
            }
        } else {
            completionContext = .queue(callback)
        }
    }

    deinit { cache?.deallocate() }

    /// The asset's size, once open; nil before.
    public var length: Int64? {
        lock.withLock { opened == nil ? nil : size }
    }

    /// `.seek`: any offset is one block read away.
    public var offsetCapability: BlobOffsetCapability { .seek }

    /// The rendition streamed, once open; nil before.
    public var rendition: AssetRendition? { lock.withLock { opened?.rendition } }

    /// The file name of the rendition streamed, once open.
    public var filename: String? { lock.withLock { opened?.filename } }

    /// The uniform type identifier of the rendition streamed, once open.
    public var uti: String? { lock.withLock { opened?.uti } }

    /// What the source did so far.
    public var statistics: Statistics {
        Statistics(
            lookups: lookupCount.load(ordering: .relaxed),
            getBytesCalls: getBytesCount.load(ordering: .relaxed),
            invalidations: invalidationCount.load(ordering: .relaxed),
            recheckedBytes: recheckedCount.load(ordering: .relaxed))
    }

    // MARK: - Open

    /// Starts the lookup; completes on the library's callback queue.
    public func open() {
        let go = lock.withLock { () -> Bool in
            guard phase == .idle else { return false }
            phase = .opening
            return true
        }
        if go { startLookup() }
    }

    private func startLookup() {
        lookupCount.add(1, ordering: .relaxed)
        let start: @Sendable () -> Void = {
            self.library.asset(for: self.url) { result in self.lookupFinished(result) }
        }
        if let openQueue { openQueue.async(execute: start) } else { start() }
    }

    /// What to announce once the lock is released.
    private enum Announcement {
        case none, opened, openedAtEnd, bytes, atEnd, retry
        case error(BlobStreamError)
    }

    /// The library's answer, on its callback queue.
    private func lookupFinished(_ result: Result<Asset, any Error>) {
        lock.lock()
        let announcement: Announcement
        switch (phase, result) {
        case (.opening, .failure(let error)):
            phase = .failed
            announcement = .error(namingURL(error, context: "cannot open"))
        case (.looking, .failure(let error)):
            phase = .failed
            if let e = error as? BlobStreamError, e.code == .notFound {
                announcement = .error(
                    BlobStreamError(
                        .changed,
                        "'\(url)' changed while being read: it is no longer in its library (at offset \(position) of \(size) bytes)",
                        cause: e))
            } else {
                announcement = .error(
                    namingURL(error, context: "cannot look up again after its library changed (at offset \(position))"))
            }
        case (.opening, .success(let asset)):
            announcement = opening(asset.representation(renditionChoice))
        case (.looking, .success(let asset)):
            announcement = resuming(asset)
        default: // closed meanwhile
            announcement = .none
        }
        lock.unlock()
        announce(announcement)
    }

    /// With `lock` held: takes the representation found at open, fills the cache.
    private func opening(_ rep: any AssetRepresentation) -> Announcement {
        if position > rep.size {
            phase = .failed
            return .error(
                BlobStreamError(.invalidOffset, "offset \(position) is past the end of '\(url)' (\(rep.size) bytes)"))
        }
        representation = rep
        size = rep.size
        fingerprint = rep.fingerprint
        if cache == nil {
            cache = .allocate(byteCount: Int(min(Int64(cacheSize), max(rep.size, 1))), alignment: 64)
        }
        if position == size {
            opened = (rep.rendition, rep.filename, rep.uti)
            phase = .ready
            return .openedAtEnd
        }
        switch fillCache(at: position) {
        case .filled:
            opened = (rep.rendition, rep.filename, rep.uti)
            phase = .ready
            attempts = 0
            return .opened
        case .invalidated:
            return retryLocked()
        case .failed(let error):
            phase = .failed
            return .error(error)
        }
    }

    /// With `lock` held: checks that the asset found again is the one being read (same
    /// rendition and size, and the bytes handed out so far are its bytes), and refills the
    /// cache at the current position from it.
    private func resuming(_ asset: Asset) -> Announcement {
        guard let opened else { return .none }
        let found = opened.rendition == .edited ? asset.edited : asset.original
        guard let rep = found else {
            phase = .failed
            return .error(
                BlobStreamError(
                    .changed,
                    "'\(url)' changed while being read: its edited rendition was removed (at offset \(position) of \(size) bytes)"
                ))
        }
        if rep.size != size {
            phase = .failed
            return .error(
                BlobStreamError(
                    .changed,
                    "'\(url)' changed while being read: its size is now \(rep.size) bytes (at offset \(position) of \(size) bytes)"
                ))
        }
        if !verifiesDeliveredBytes && rep.fingerprint != fingerprint {
            phase = .failed
            return .error(
                BlobStreamError(
                    .changed,
                    "'\(url)' changed while being read: its bytes are different (fingerprint \(fingerprint) is now \(rep.fingerprint)) (at offset \(position) of \(size) bytes)"
                ))
        }
        representation = rep
        switch verifiesDeliveredBytes ? recheckDelivered() : .same {
        case .same:
            break
        case .different(let run):
            phase = .failed
            return .error(
                BlobStreamError(
                    .changed,
                    "'\(url)' changed while being read: the bytes already read from offset \(run.start) to \(run.end) are not those of its current version of the same size (at offset \(position) of \(size) bytes)"
                ))
        case .invalidated:
            return retryLocked()
        case .failed(let error):
            phase = .failed
            return .error(error)
        case .closed:
            return .none
        }
        if position == size {
            phase = .ready
            return endCheckedLocked()
        }
        switch fillCache(at: position) {
        case .filled:
            phase = .ready
            attempts = 0
            return .bytes
        case .invalidated:
            return retryLocked()
        case .failed(let error):
            phase = .failed
            return .error(error)
        }
    }

    private enum Recheck {
        case same
        case different(DeliveredRun)
        case invalidated
        case failed(BlobStreamError)
        case closed
    }

    /// With `lock` held, `representation` being the version found again: reads every byte
    /// handed out so far again from it (whole aligned blocks, through the cache) and
    /// compares their hash with the hash of what was handed out.
    private func recheckDelivered() -> Recheck {
        guard let cache else { return .closed }
        var runs = earlierRuns
        if position > runStart { runs.append(DeliveredRun(start: runStart, end: position, digest: runHash.digest())) }
        cacheStart = 0
        cacheEnd = 0 // the cache is the scratch buffer: empty from now on
        let block = Int64(blockSize)
        for run in runs {
            var hash = DeliveredHash()
            var at = run.start - run.start % block
            let last = min(size, (run.end + block - 1) / block * block) // the end of the run's last block
            while at < run.end {
                if closing.load(ordering: .relaxed) { return .closed }
                let want = Int(min(Int64(cacheSize), last - at))
                switch getBlock(at: at, count: want, into: cache) {
                case .filled: break
                case .invalidated: return .invalidated
                case .failed(let error): return .failed(error)
                }
                let from = max(run.start, at)
                let to = min(run.end, at + Int64(want))
                hash.combine(cache + Int(from - at), Int(to - from))
                recheckedCount.add(Int(to - from), ordering: .relaxed)
                at += Int64(want)
            }
            if hash.digest() != run.digest { return .different(run) }
        }
        return .same
    }

    /// With `lock` held: one more lookup after an invalidation, unless there were too many.
    private func retryLocked() -> Announcement {
        attempts += 1
        if attempts > Self.maxAttempts {
            phase = .failed
            return .error(
                BlobStreamError(
                    .invalidated,
                    "'\(url)' kept being invalidated by changes of its library: \(Self.maxAttempts) lookups in a row were invalid before a block could be read (at offset \(position))"
                ))
        }
        return .retry
    }

    /// With `lock` held, in phase `.ready` at the end: `.atEnd` when the representation read
    /// from is still valid; otherwise one more lookup, whose answer checks what was handed
    /// out as on resume (the end is announced only then), or the error.
    private func endCheckedLocked() -> Announcement {
        do {
            try representation?.checkValid()
            return .atEnd
        } catch let error as BlobStreamError where error.code == .invalidated {
            invalidationCount.add(1, ordering: .relaxed)
            phase = .looking
            return retryLocked()
        } catch {
            phase = .failed
            return .error(namingURL(error, context: "cannot check at the end (offset \(position)) of"))
        }
    }

    /// At the end, in a read: announces it once the representation was found still valid
    /// (see `endCheckedLocked`).
    private func endOfRead() {
        let announcement = lock.withLock { () -> Announcement in
            guard phase == .ready else { return .none }
            return endCheckedLocked()
        }
        if case .retry = announcement { state.hasBytesAvailable = false }
        announce(announcement)
    }

    /// Makes state changes outside the lock (observers may call back).
    private func announce(_ announcement: Announcement) {
        switch announcement {
        case .none:
            break
        case .opened:
            // In this order: the stream announces hasBytesAvailable only once open.
            state.isOpenCompleted = true
            state.hasBytesAvailable = true
        case .openedAtEnd:
            // The end first: a synchronous open returns as soon as it sees the open
            // completed, and must find the end already there.
            state.isAtEnd = true
            state.isOpenCompleted = true
        case .bytes:
            state.isAtEnd = false
            state.hasBytesAvailable = true
        case .atEnd:
            state.isAtEnd = true
        case .retry:
            startLookup()
        case .error(let error):
            state.error = error
        }
    }

    private func namingURL(_ error: any Error, context: String) -> BlobStreamError {
        if let e = error as? BlobStreamError {
            return e.message.contains(url)
                ? e : BlobStreamError(e.code, "\(context) '\(url)': \(e.message)", cause: e.cause)
        }
        return BlobStreamError(.sourceFailed, "\(context) '\(url)'", cause: error)
    }

    // MARK: - Blocks

    /// The bytes the cache holds when full.
    private var cacheSize: Int { blockSize * cachedBlocks }

    /// Fills the cache from the block holding `offset` on. Called by the owner in phase
    /// `.ready`, or with `lock` held.
    private func fillCache(at offset: Int64) -> Fill {
        guard let cache else {
            return .failed(BlobStreamError(.closed, "'\(url)' was closed"))
        }
        let start = offset - offset % Int64(blockSize)
        cacheStart = start
        cacheEnd = start // empty until filled
        let want = Int(min(Int64(cacheSize), size - start))
        let fill = getBlock(at: start, count: want, into: cache)
        if case .filled = fill { cacheEnd = start + Int64(want) }
        return fill
    }

    /// Reads `count` bytes at `start` (a multiple of `blockSize`) into `destination`: the
    /// cache, or a caller's buffer; whole blocks, or up to the asset's end.
    private func getBlock(at start: Int64, count want: Int, into destination: UnsafeMutableRawPointer) -> Fill {
        guard let rep = representation else {
            return .failed(BlobStreamError(.closed, "'\(url)' was closed"))
        }
        var got = 0
        while got < want {
            getBytesCount.add(1, ordering: .relaxed)
            let n: Int
            do {
                n = try rep.getBytes(into: destination + got, fromOffset: start + Int64(got), length: want - got)
            } catch let error as BlobStreamError where error.code == .invalidated {
                invalidationCount.add(1, ordering: .relaxed)
                return .invalidated
            } catch {
                return .failed(namingURL(error, context: "cannot read at offset \(start + Int64(got)) of"))
            }
            if n <= 0 {
                return .failed(
                    BlobStreamError(
                        .changed,
                        "'\(url)' changed while being read: its bytes end at offset \(start + Int64(got)), but it was \(size) bytes long when opened"
                    ))
            }
            got += min(n, want - got)
        }
        return .filled
    }

    // MARK: - Reading

    /// Copies from the cache, or reads whole blocks straight into `buffer`; reads the next
    /// blocks as the buffer needs them (see "Reading across an invalidation").
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard state.hasBytesAvailable else { return readWithoutBytes(buffer, maxLength: maxLength) }
        return copy(into: buffer, maxLength: maxLength)
    }

    /// The hot path, in phase `.ready` with `position < size`.
    @inline(__always)
    private func copy(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard let cache else { return 0 }
        var copied = 0
        while copied < maxLength && position < size {
            if position >= cacheEnd || position < cacheStart {
                // Nothing cached here. At a block boundary, the whole blocks the buffer has
                // room for go straight into it, in one getBytes; anything else goes through
                // the cache.
                let room = maxLength - copied
                let rest = size - position
                var direct: Int?
                if position % Int64(blockSize) == 0 && (room >= blockSize || Int64(room) >= rest) {
                    direct = Int64(room) >= rest ? Int(rest) : room - room % blockSize
                }
                let fill =
                    direct.map { getBlock(at: position, count: $0, into: buffer + copied) } ?? fillCache(at: position)
                switch fill {
                case .filled:
                    guard let direct else { break } // the cache now holds `position`
                    if verifiesDeliveredBytes { runHash.combine(buffer + copied, direct) }
                    copied += direct
                    position += Int64(direct)
                    continue
                case .invalidated:
                    // The bytes copied so far are good; none past them is handed out until
                    // the asset was looked up again ("nothing yet" when there are none).
                    beginLookingAgain()
                    return copied == 0 && state.error != nil ? -1 : copied
                case .failed(let error):
                    lock.withLock { phase = .failed }
                    state.error = error
                    return copied == 0 ? -1 : copied
                }
            }
            let n = min(Int(cacheEnd - position), maxLength - copied)
            UnsafeMutableRawPointer(buffer + copied).copyMemory(from: cache + Int(position - cacheStart), byteCount: n)
            if verifiesDeliveredBytes { runHash.combine(buffer + copied, n) }
            copied += n
            position += Int64(n)
        }
        if position == size {
            // The bytes copied are handed out; the end only once the version is confirmed.
            endOfRead()
            return copied == 0 && state.error != nil ? -1 : copied
        }
        return copied
    }

    /// A read while `hasBytesAvailable` is false: at the end, after an error, or a caller
    /// that did not wait.
    private func readWithoutBytes(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if state.isAtEnd { return 0 }
        if state.error != nil { return -1 }
        let phase = lock.withLock { self.phase }
        let error: BlobStreamError
        switch phase {
        case .ready where position < size:
            return copy(into: buffer, maxLength: maxLength) // announcement under way
        case .ready where position == size:
            endOfRead() // the end, or "nothing yet" while the asset is looked up again
            return state.error != nil ? -1 : 0
        case .idle:
            error = BlobStreamError(.notOpen, "'\(url)' is not open")
        case .opening:
            error = BlobStreamError(
                .notOpen,
                "'\(url)' is still being looked up: wait for isOpenCompleted and hasBytesAvailable before reading")
        case .looking:
            error = BlobStreamError(
                .notOpen,
                "'\(url)' is being looked up again after its library changed: wait for hasBytesAvailable before reading"
            )
        case .closed:
            error = BlobStreamError(.closed, "'\(url)' was closed")
        default:
            error = BlobStreamError(.sourceFailed, "'\(url)' cannot be read")
        }
        state.error = error
        return -1
    }

    /// Drops `hasBytesAvailable` and looks the asset up again (a getBytes was invalidated).
    private func beginLookingAgain() {
        let announcement = lock.withLock { () -> Announcement in
            guard phase == .ready else { return .none }
            phase = .looking
            return retryLocked()
        }
        if case .retry = announcement { state.hasBytesAvailable = false }
        announce(announcement)
    }

    // MARK: - Properties

    /// `.fileCurrentOffsetKey`: an `NSNumber` of the offset of the next byte.
    public func property(forKey key: Stream.PropertyKey) -> Any? {
        key == .fileCurrentOffsetKey ? NSNumber(value: position) : nil
    }

    /// `.fileCurrentOffsetKey`: before `open()`, where reading starts; after, moves there
    /// (refused past the end, after an error or close). Outside the cache the cache is filled
    /// from there at once; an invalidation then drops `hasBytesAvailable` until the asset
    /// was looked up again.
    public func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let offset = BlobOffset.value(from: property) else { return false }
        lock.lock()
        let announcement: Announcement
        switch phase {
        case .idle, .opening:
            position = offset // checked against the size when the lookup answers
            runStart = offset // nothing was handed out yet
            lock.unlock()
            return true
        case .looking:
            guard offset <= size else {
                lock.unlock()
                return false
            }
            move(to: offset) // the answer refills there
            lock.unlock()
            return true
        case .failed, .closed:
            lock.unlock()
            return false
        case .ready:
            guard offset <= size else {
                lock.unlock()
                return false
            }
            move(to: offset)
            if offset == size {
                announcement = endCheckedLocked()
            } else if offset >= cacheStart && offset < cacheEnd {
                announcement = .bytes
            } else {
                switch fillCache(at: offset) {
                case .filled:
                    announcement = .bytes
                case .invalidated:
                    phase = .looking
                    announcement = retryLocked()
                case .failed(let error):
                    phase = .failed
                    announcement = .error(error)
                }
            }
        }
        lock.unlock()
        if case .retry = announcement {
            state.isAtEnd = false
            state.hasBytesAvailable = false
        }
        announce(announcement)
        return true
    }

    /// With `lock` held, after open: moves the cursor; what was handed out before stays to
    /// be checked on resume, and a new run starts at `offset`.
    private func move(to offset: Int64) {
        guard offset != position else { return }
        if verifiesDeliveredBytes && position > runStart {
            earlierRuns.append(DeliveredRun(start: runStart, end: position, digest: runHash.digest()))
        }
        runHash = DeliveredHash()
        runStart = offset
        position = offset
    }

    /// Stops: a lookup under way is ignored when it answers (a recheck under way stops at
    /// its next block); later reads return −1.
    public func close() {
        closing.store(true, ordering: .relaxed)
        lock.withLock {
            phase = .closed
            representation = nil
        }
        state.hasBytesAvailable = false
    }
}
