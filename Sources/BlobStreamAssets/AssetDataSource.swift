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
///   where the source reads its first block and then announces `isOpenCompleted` and, at
///   once, `hasBytesAvailable` (or `isAtEnd` for an empty asset). `completionContext` is
///   that queue (and `openQueue`), so a synchronous stream opened or read there fails at
///   once (`.wouldDeadlock`) instead of waiting forever.
/// - **Renditions**: `.current` (the default) streams the edited rendition when the asset
///   has one, the original otherwise; `.original` always the original. `rendition` tells
///   which one is streamed once open; the choice made at open holds to the end.
/// - **Block cache**: the source asks the representation for whole blocks of `blockSize`
///   bytes (aligned on multiples of it) and serves every `read` by copying from the current
///   block, so `getBytes` runs once per block whatever the read sizes: at most
///   ceil(size / blockSize) times for a read from start to end. A `read` takes no lock and
///   allocates nothing; only the read that empties a block asks for the next one.
/// - **Invalidation** (the library changed): reading goes on at the same offset, without a
///   lost or repeated byte, after looking the asset up again — unless its size, fingerprint
///   or rendition changed meanwhile, which is an error (`.changed`, naming the URL and the
///   offset) rather than a splice of two versions. See "Never a read of 0" below.
/// - `.fileCurrentOffsetKey` (`offsetCapability` `.seek`): before `open()` where reading
///   starts (past the end: the open fails with `.invalidOffset`); after, moves there (within
///   the current block: no `getBytes`).
/// - Errors are `BlobStreamError`s naming the URL: the library's lookup errors (`.notFound`
///   for an unknown id or a missing library, `.malformedURL`), `.changed`, `.ioFailed`, and
///   `.invalidated` when the library kept invalidating (8 times in a row without a block
///   read).
///
/// ## Never a read of 0
///
/// A `read` must return bytes (> 0) when called with `hasBytesAvailable` true: 0 means the
/// end. An invalidation is only discovered by `getBytes`, which is too late if the read has
/// no byte left to return, and the read may not wait for the new lookup (rule 2). So the
/// source keeps one invariant: `hasBytesAvailable` is true only while the current block
/// holds at least one unread byte. The read that empties a block asks for the next one
/// before returning (it still holds the bytes it copied); if `getBytes` says
/// `.invalidated`, the read returns those bytes, drops `hasBytesAvailable`, and starts the
/// lookup; the lookup's answer refills the block on the callback queue and only then
/// announces `hasBytesAvailable` again. The open does the same with the first block, so an
/// invalidation right after open is absorbed before any byte is promised. Moving with
/// `.fileCurrentOffsetKey` outside the current block fetches the new one inside
/// `setProperty`, on the same terms.
///
/// Like every source, `open`, `read`, `setProperty` and `close` come from one owner at a
/// time (a `BlobInputStream`); announcements come from the library's callback queue too.
public final class AssetDataSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: the fields below `lock` are guarded by it while a lookup is under
    // way; while none is (phase `.ready`), only the owner's serialized calls touch them, and
    // a lookup is only started by the owner and ends by announcing `hasBytesAvailable`.

    /// 1 MiB.
    public static let defaultBlockSize = 1 << 20

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
    /// The block size of the cache.
    public let blockSize: Int
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
    private var block: UnsafeMutableRawPointer?
    private var blockStart: Int64 = 0
    private var blockEnd: Int64 = 0

    private let lookupCount = Atomic<Int>(0)
    private let getBytesCount = Atomic<Int>(0)
    private let invalidationCount = Atomic<Int>(0)

    /// Makes a source for the asset `url` names in `library`; nothing happens until `open()`.
    ///
    /// - Parameters:
    ///   - url: `assets-library://asset/asset.JPG?id=ID&ext=JPG`.
    ///   - library: resolves the URL.
    ///   - rendition: `.current` (edited when there is one) or `.original`.
    ///   - blockSize: the bytes asked of the representation at a time (> 0).
    ///   - openQueue: where to start lookups; nil starts them on the calling thread.
    public init(
        url: String, library: any AssetLibrary, rendition: AssetRenditionChoice = .current,
        blockSize: Int = AssetDataSource.defaultBlockSize, openQueue: DispatchQueue? = nil
    ) {
        precondition(blockSize > 0, "blockSize must be positive")
        self.url = url
        self.library = library
        self.renditionChoice = rendition
        self.blockSize = blockSize
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

    deinit { block?.deallocate() }

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

    /// With `lock` held: takes the representation found at open, reads the first block.
    private func opening(_ rep: any AssetRepresentation) -> Announcement {
        if position > rep.size {
            phase = .failed
            return .error(BlobStreamError(.invalidOffset, "offset \(position) is past the end of '\(url)' (\(rep.size) bytes)"))
        }
        representation = rep
        size = rep.size
        fingerprint = rep.fingerprint
        if block == nil {
            block = .allocate(byteCount: Int(min(Int64(blockSize), max(rep.size, 1))), alignment: 64)
        }
        if position == size {
            opened = (rep.rendition, rep.filename, rep.uti)
            phase = .ready
            return .openedAtEnd
        }
        switch fillBlock(at: position) {
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
    /// refills the block at the current position from it.
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
        switch fillBlock(at: position) {
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

    /// Reads the block holding `offset` from the representation into the cache. Called by
    /// the owner in phase `.ready`, or with `lock` held.
    private func fillBlock(at offset: Int64) -> Fill {
        guard let rep = representation, let block else {
            return .failed(BlobStreamError(.closed, "'\(url)' was closed"))
        }
        let start = offset - offset % Int64(blockSize)
        let want = Int(min(Int64(blockSize), size - start))
        blockStart = start
        blockEnd = start  // empty until filled
        var got = 0
        while got < want {
            getBytesCount.add(1, ordering: .relaxed)
            let n: Int
            do {
                n = try rep.getBytes(into: block + got, fromOffset: start + Int64(got), length: want - got)
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
        blockEnd = start + Int64(want)
        return .filled
    }

    // MARK: - Reading

    /// Copies from the current block; the read that empties it fetches the next one (see
    /// "Never a read of 0").
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard state.hasBytesAvailable else { return readWithoutBytes(buffer, maxLength: maxLength) }
        return copy(into: buffer, maxLength: maxLength)
    }

    /// The hot path; requires `blockStart <= position < blockEnd`.
    @inline(__always)
    private func copy(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard let block else { return 0 }
        var copied = 0
        while true {
            let n = min(Int(blockEnd - position), maxLength - copied)
            UnsafeMutableRawPointer(buffer + copied).copyMemory(from: block + Int(position - blockStart), byteCount: n)
            copied += n
            position += Int64(n)
            if position < blockEnd { return copied }
            if position == size {
                state.isAtEnd = true
                return copied
            }
            switch fillBlock(at: position) {
            case .filled:
                if copied == maxLength { return copied }
            case .invalidated:
                beginLookingAgain()
                return copied
            case .failed(let error):
                lock.withLock { phase = .failed }
                state.error = error
                return copied
            }
        }
    }

    /// A read while `hasBytesAvailable` is false: at the end, after an error, or a caller
    /// that did not wait.
    private func readWithoutBytes(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if state.isAtEnd { return 0 }
        if state.error != nil { return -1 }
        let phase = lock.withLock { self.phase }
        let error: BlobStreamError
        switch phase {
        case .ready where position < blockEnd && position >= blockStart:
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

    /// Drops `hasBytesAvailable` and looks the asset up again (the block was invalidated).
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
    /// (refused past the end, after an error or close). Outside the current block the block
    /// there is read at once; an invalidation then drops `hasBytesAvailable` until the asset
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
            } else if offset >= blockStart && offset < blockEnd {
                announcement = .bytes
            } else {
                switch fillBlock(at: offset) {
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
