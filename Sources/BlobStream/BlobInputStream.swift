import Foundation

/// An `InputStream` fed by any `BlobDataSource`: files, gzip streams, archive members,
/// photo-library assets or a source of your own.
///
/// Hand it to anything that takes an `InputStream` (URLSession bodies, parsers), or read it
/// yourself. In `.synchronous` mode `open()` returns when the source has opened and `read`
/// blocks until bytes, the end or an error. In `.asynchronous` mode `open()` returns at once
/// and events arrive on the run loops the stream is scheduled in, for the `delegate` and for
/// closure clients added with `addEventHandler(for:_:)`; a synchronous stream that is
/// scheduled delivers the same events.
///
/// Events: `.openCompleted` once, then `.hasBytesAvailable` without any read first and again
/// after each read while bytes remain, then `.endEncountered` (an empty source goes straight
/// to it) or `.errorOccurred` (once; `streamError` is a `BlobStreamError` whose `cause` is the
/// source's error). Pending events of one kind coalesce until delivered; nothing is delivered
/// after `close()`.
///
/// Offsets: `seek(to:)` (or `.fileCurrentOffsetKey`, an integer `NSNumber`) before `open()`
/// starts the read there, after it moves there; negative, non-integer or past-the-end values
/// are refused. `readOffset` (or the key) tells the offset of the next byte.
///
/// Thread safety: the source may announce changes from any thread; `close()` may be called
/// from another thread and wakes a waiting `open` or `read`, which then fail (`read` returns
/// −1). Other calls come from one owner at a time, as for any `InputStream`.
open class BlobInputStream: InputStream {
    /// How `open()` and `read` wait for the source.
    public enum Mode: Sendable {
        /// `open()` returns when the source has opened or failed; `read` blocks until it can
        /// answer.
        case synchronous
        /// `open()` returns at once; readiness arrives as events on scheduled run loops.
        case asynchronous
    }

    let core: StreamCore

    /// The source the stream reads.
    public var dataSource: any BlobDataSource { core.source }

    /// The mode given at creation.
    public var mode: Mode { core.mode }

    /// Makes a stream over `dataSource`. The stream owns the source's `open`, `read`,
    /// `setProperty` and `close` calls from now on.
    public init(dataSource: any BlobDataSource, mode: Mode = .synchronous) {
        core = StreamCore(source: dataSource, mode: mode)
        super.init(data: Data())
        core.owner = self
    }

    deinit { core.close() }

    // MARK: - Stream

    /// Opens the source; a second call does nothing (URLSession on Linux opens twice).
    open override func open() { core.open() }

    /// Closes the source and unschedules the stream. Does nothing before `open()`; wakes a
    /// waiting `open` or `read` on another thread. A closed stream never reopens.
    open override func close() { core.close() }

    /// The current status.
    open override var streamStatus: Stream.Status {
        core.condition.lock()
        defer { core.condition.unlock() }
        return core.status
    }

    /// The error that stopped the stream: a `BlobStreamError`, whose `cause` is the source's
    /// own error when the source failed.
    open override var streamError: (any Error)? {
        core.condition.lock()
        defer { core.condition.unlock() }
        return core.error
    }

    /// Receives the stream's events on the scheduled run loops. Held weakly.
    open override var delegate: (any StreamDelegate)? {
        get {
            core.condition.lock()
            defer { core.condition.unlock() }
            return core.delegate
        }
        set {
            core.condition.lock()
            core.delegate = newValue
            core.condition.unlock()
        }
    }

    /// `.fileCurrentOffsetKey`: the offset of the next byte; other keys go to the source.
    open override func property(forKey key: Stream.PropertyKey) -> AnyObject? {
        if key == .fileCurrentOffsetKey { return core.readOffset().map { NSNumber(value: $0) } }
        core.sourceLock.lock()
        defer { core.sourceLock.unlock() }
        return core.source.property(forKey: key) as AnyObject?
    }

    /// `.fileCurrentOffsetKey` takes a non-negative integer `NSNumber`: before `open()` the
    /// read starts there, after it the source moves there. Returns false when refused
    /// (negative, not an integer, past a known length, a source that cannot move, a closed
    /// stream). Other keys go to the source.
    open override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool {
        if key == .fileCurrentOffsetKey { return core.setOffset(property) }
        core.sourceLock.lock()
        defer { core.sourceLock.unlock() }
        return core.source.setProperty(property, forKey: key)
    }

    /// The offset of the next byte `read` returns (before `open()`, where reading will
    /// start); nil when the source does not tell. The typed form of `.fileCurrentOffsetKey`.
    public var readOffset: Int64? { core.readOffset() }

    /// Before `open()`, makes the read start at `offset`; after, moves the source there (at
    /// the cost its `offsetCapability` says). Throws `.offsetUnsupported` for a source that
    /// cannot move, `.invalidOffset` for a negative offset, one past a known length or one
    /// the source refuses, `.closed` on a closed or failed stream; a refused move changes
    /// nothing. The typed form of `setProperty(_:forKey: .fileCurrentOffsetKey)`.
    public func seek(to offset: Int64) throws(BlobStreamError) { try core.seek(to: offset) }

    /// Delivers events on `aRunLoop` in `mode` (several run loops and modes may be added).
    /// From the first event on, the stream keeps one timer in that loop (its wake-up), so a
    /// loop run until it has nothing left runs until the stream is closed or removed.
    open override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        core.schedule(aRunLoop, mode)
    }

    /// Stops delivering events on `aRunLoop` in `mode`.
    open override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        core.unschedule(aRunLoop, mode)
    }

    // MARK: - InputStream

    /// Reads up to `len` bytes: > 0 bytes read, 0 at the end, −1 on error, after close, or
    /// before open. Waits (in both modes) while the source has nothing to hand out yet.
    open override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        core.read(buffer, maxLength: len)
    }

    /// Lends the source's own buffer instead of copying, when the source has one (archive
    /// members lend libarchive's blocks): on true, `buffer` points at `len` (> 0) bytes that
    /// are consumed (as `read` would have returned them) and stay valid until the next
    /// call on the stream. Waits for bytes like `read`. False when nothing is lent (the
    /// source has no buffer, or not here, or the end or an error came): nothing was
    /// consumed, and `read` gives the bytes, the end or the error.
    open override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        core.getBuffer(buffer, length: len)
    }

    /// In asynchronous mode, whether a `read` would return at once with bytes. In
    /// synchronous mode, true until the end or an error (a `read` then waits for bytes).
    open override var hasBytesAvailable: Bool {
        core.condition.lock()
        let status = core.status
        core.condition.unlock()
        switch status {
        case .open, .reading, .opening:
            return mode == .synchronous ? true : core.sourceState.hasBytesAvailable
        default:
            return false
        }
    }

    // MARK: - Closure clients

    /// A closure client's subscription; `invalidate()` (or releasing it) stops delivery.
    public final class EventSubscription {
        private weak var core: StreamCore?
        private let id: Int
        init(core: StreamCore, id: Int) {
            self.core = core
            self.id = id
        }
        /// Stops delivery to this client.
        public func invalidate() {
            guard let core else { return }
            core.condition.lock()
            core.handlers[id] = nil
            core.condition.unlock()
        }
        deinit { invalidate() }
    }

    /// Adds a closure client that receives the events in `mask`, on the scheduled run loops,
    /// after the delegate. Keep the returned subscription: releasing it removes the client.
    public func addEventHandler(
        for mask: Stream.Event, _ handler: @escaping (BlobInputStream, Stream.Event) -> Void
    ) -> EventSubscription {
        core.condition.lock()
        core.nextHandlerID += 1
        let id = core.nextHandlerID
        core.handlers[id] = (mask, handler)
        core.condition.unlock()
        return EventSubscription(core: core, id: id)
    }
}
