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
///   read from start to end whatever the read sizes. A read with room for whole blocks at
///   a block boundary gets them straight from one `getBytes` into its buffer, without a
///   copy; other reads are served from a cache of `cachedBlocks` blocks, filled by one
///   `getBytes`. A `read` takes no lock and allocates nothing.
/// - **Invalidation** (the library changed): reading goes on at the same offset, without a
///   lost or repeated byte, after looking the asset up again — unless its size, fingerprint
///   or rendition changed meanwhile, which is an error (`.changed`, naming the URL and the
///   offset) rather than a splice of two versions. See "Reading across an invalidation" below.
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
/// (rule 2's exception) and waits. The lookup's answer refills the cache at the same offset
/// on the callback queue and only then announces `hasBytesAvailable` again. The open reads
/// the first cache fill the same way, so an invalidation right after open is absorbed
/// before any byte is promised. Moving with `.fileCurrentOffsetKey` outside the cache reads
/// there inside `setProperty`, on the same terms.
///
/// Like every source, `open`, `read`, `setProperty` and `close` come from one owner at a
/// time (a `BlobInputStream`); announcements come from the library's callback queue too.
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
        /// `getBytes` calls made.
        public var getBytesCalls: Int
        /// `.invalidated` answers from `getBytes`.
        public var invalidations: Int

        /// Makes a value (to compare with).
        public init(lookups: Int, getBytesCalls: Int, invalidations: Int) {
            self.lookups = lookups
            self.getBytesCalls = getBytesCalls
            self.invalidations = invalidations
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
    private var fingerprint = ""
    private var opened: (rendition: AssetRendition, filename: String, uti: String)?
    private var attempts = 0

    // The cursor. `position` is written only by the owner's calls.
    private var position: Int64 = 0
    private var cache: UnsafeMutableRawPointer?  // cacheSize bytes, holding [cacheStart, cacheEnd)
    private var cacheStart: Int64 = 0
    private var cacheEnd: Int64 = 0

    private let lookupCount = Atomic<Int>(0)
    private let getBytesCount = Atomic<Int>(0)
    private let invalidationCount = Atomic<Int>(0)

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
    public init(
        url: String, library: any AssetLibrary, rendition: AssetRenditionChoice = .current,
        blockSize: Int = AssetDataSource.defaultBlockSize, cachedBlocks: Int = AssetDataSource.defaultCachedBlocks,
        openQueue: DispatchQueue? = nil
    ) {
        precondition(blockSize > 0, "blockSize must be positive")
        precondition(cachedBlocks > 0, "cachedBlocks must be positive")
        self.url = url
        self.library = library
        self.renditionChoice = rendition
        self.blockSize = blockSize
        self.cachedBlocks = cachedBlocks
        self.openQueue = openQueue
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
            invalidations: invalidationCount.load(ordering: .relaxed))
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
                announcement = .error(BlobStreamError(
                    .changed, "'\(url)' changed while being read: it is no longer in its library (at offset \(position) of \(size) bytes)", cause: e))
            } else {
                announcement = .error(namingURL(error, context: "cannot look up again after its library changed (at offset \(position))"))
            }
        case (.opening, .success(let asset)):
            announcement = opening(asset.representation(renditionChoice))
        case (.looking, .success(let asset)):
            announcement = resuming(asset)
        default:  // closed meanwhile
            announcement = .none
        }
        lock.unlock()
        announce(announcement)
    }

    /// With `lock` held: takes the representation found at open, fills the cache.
    private func opening(_ rep: any AssetRepresentation) -> Announcement {
        if position > rep.size {
            phase = .failed
            return .error(BlobStreamError(.invalidOffset, "offset \(position) is past the end of '\(url)' (\(rep.size) bytes)"))
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

    /// With `lock` held: checks that the asset found again is the one being read, and
    /// refills the cache at the current position from it.
    private func resuming(_ asset: Asset) -> Announcement {
        guard let opened else { return .none }
        let found = opened.rendition == .edited ? asset.edited : asset.original
        guard let rep = found else {
            phase = .failed
            return .error(BlobStreamError(.changed, "'\(url)' changed while being read: its edited rendition was removed (at offset \(position) of \(size) bytes)"))
        }
        if rep.size != size || rep.fingerprint != fingerprint {
            phase = .failed
            let what = rep.size != size ? "its size is now \(rep.size) bytes" : "its bytes are different (fingerprint \(fingerprint) is now \(rep.fingerprint))"
            return .error(BlobStreamError(.changed, "'\(url)' changed while being read: \(what) (at offset \(position) of \(size) bytes)"))
        }
        representation = rep
        if position == size {
            phase = .ready
            return .atEnd
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

    /// With `lock` held: one more lookup after an invalidation, unless there were too many.
    private func retryLocked() -> Announcement {
        attempts += 1
        if attempts > Self.maxAttempts {
            phase = .failed
            return .error(BlobStreamError(.invalidated, "'\(url)' kept being invalidated by changes of its library: \(Self.maxAttempts) lookups in a row were invalid before a block could be read (at offset \(position))"))
        }
        return .retry
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
            return e.message.contains(url) ? e : BlobStreamError(e.code, "\(context) '\(url)': \(e.message)", cause: e.cause)
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
        cacheEnd = start  // empty until filled
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
                return .failed(BlobStreamError(
                    .changed, "'\(url)' changed while being read: its bytes end at offset \(start + Int64(got)), but it was \(size) bytes long when opened"))
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
                let fill = direct.map { getBlock(at: position, count: $0, into: buffer + copied) } ?? fillCache(at: position)
                switch fill {
                case .filled:
                    guard let direct else { break }  // the cache now holds `position`
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
            copied += n
            position += Int64(n)
        }
        if position == size { state.isAtEnd = true }
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
            return copy(into: buffer, maxLength: maxLength)  // announcement under way
        case .ready where position == size:
            state.isAtEnd = true
            return 0
        case .idle:
            error = BlobStreamError(.notOpen, "'\(url)' is not open")
        case .opening:
            error = BlobStreamError(.notOpen, "'\(url)' is still being looked up: wait for isOpenCompleted and hasBytesAvailable before reading")
        case .looking:
            error = BlobStreamError(.notOpen, "'\(url)' is being looked up again after its library changed: wait for hasBytesAvailable before reading")
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
            position = offset  // checked against the size when the lookup answers
            lock.unlock()
            return true
        case .looking:
            guard offset <= size else { lock.unlock(); return false }
            position = offset  // the answer refills there
            lock.unlock()
            return true
        case .failed, .closed:
            lock.unlock()
            return false
        case .ready:
            guard offset <= size else { lock.unlock(); return false }
            position = offset
            if offset == size {
                announcement = .atEnd
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

    /// Stops: a lookup under way is ignored when it answers; later reads return −1.
    public func close() {
        lock.withLock {
            phase = .closed
            representation = nil
        }
        state.hasBytesAvailable = false
    }
}
