import Foundation

/// How a source reaches an offset set through `.fileCurrentOffsetKey`.
public enum BlobOffsetCapability: Sendable, Equatable, CustomStringConvertible {
    /// In constant time (a file read with `pread`).
    case seek
    /// By reading and discarding the bytes before it (a pipe, a gzip stream): cost grows
    /// with the offset.
    case readAndDiscard
    /// Not at all: setting an offset is refused.
    case none

    /// The capability's name, as messages print it.
    public var description: String {
        switch self {
        case .seek: "seek"
        case .readAndDiscard: "read-and-discard"
        case .none: "none"
        }
    }
}

/// Where a source announces the changes it makes outside of the calls the stream makes
/// (contract rule 3). The stream never waits for an announcement while standing there.
public enum BlobCompletionContext: Sendable {
    /// The source changes its state only inside `open`, `read`, `setProperty` and `close`:
    /// nothing to wait for, nothing to deadlock on.
    case caller
    /// The source completes work on this queue (a callback queue, an open queue).
    case queue(DispatchQueue)
    /// The source completes work where this check says `true` (a thread of its own, say).
    case custom(@Sendable () -> Bool)

    /// True when the calling thread is where the source completes: waiting here would
    /// never end.
    public var isCurrent: Bool {
        switch self {
        case .caller: false
        case .queue(let queue): QueueIdentity.isCurrent(queue)
        case .custom(let check): check()
        }
    }

    /// The context of a source that wraps a source with this context and completes work of
    /// its own on `queue` once its upstream is asynchronous: `.caller` when this is
    /// `.caller` (the wrapper then works inside the owner's calls only), otherwise where
    /// either completes.
    public func including(_ queue: DispatchQueue) -> BlobCompletionContext {
        if case .caller = self { return .caller }
        let upstream = self
        let own = BlobCompletionContext.queue(queue)
        return .custom { upstream.isCurrent || own.isCurrent }
    }
}

/// The contract every source of bytes implements. A source produces bytes on demand and
/// announces changes of its state through `state`, the way KVO did for the original
/// Objective-C data sources.
///
/// ## Implementing a source
///
/// Keep a `BlobDataSourceState` and set its values as things happen; everything else has a
/// default. A source of bytes held in memory:
///
/// ```swift
/// final class BytesSource: BlobDataSource {
///     let state = BlobDataSourceState()
///     private let bytes: [UInt8]
///     private var position = 0
///     init(_ bytes: [UInt8]) { self.bytes = bytes }
///
///     var length: Int64? { Int64(bytes.count) }
///     func open() {
///         state.isOpenCompleted = true
///         if bytes.isEmpty { state.isAtEnd = true } else { state.hasBytesAvailable = true }
///     }
///     func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
///         let n = min(maxLength, bytes.count - position)
///         bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + position, count: n) }
///         position += n
///         if position == bytes.count { state.isAtEnd = true }
///         return n
///     }
///     func close() {}
/// }
/// ```
///
/// ## Rules
/// 1. One owner calls `open`, `read`, `setProperty` and `close`, one call at a time (a
///    `BlobInputStream` serializes them). State changes may be announced from any thread.
/// 2. `read` may block on I/O but never waits for a callback. It is called only when
///    `hasBytesAvailable` is true, or to collect the end (return 0) or the error (set
///    `state.error`, return −1). Returning 0 means the end: set `isAtEnd` no later than that.
///    One exception: a source that finds within a `read` that it has nothing to hand out
///    yet (its next part opens later, an asset must be looked up again) clears
///    `hasBytesAvailable` and returns 0 with `isAtEnd` false; the stream then waits for its
///    next announcement instead of ending (one made before the read returned counts).
/// 3. A source that completes work asynchronously says where in `completionContext`.
/// 4. `close` releases resources; the stream wakes its own waiters.
/// 5. A truncated or corrupt input sets an error; it never ends cleanly.
///
/// ## Offsets
/// `readOffset` and `seek(to:)` are the typed offset API; the stream and the sources of
/// this package use them. `property(forKey:)` / `setProperty(_:forKey:)` with
/// `.fileCurrentOffsetKey` (an `NSNumber`) is the original's untyped form and keeps working
/// on every source. Implement either pair, the other follows by default:
/// - a source that implements `readOffset` and `seek(to:)` answers the key through them
///   (the default `property` / `setProperty` bridge to them for that key);
/// - a source written for the key alone (`property` / `setProperty`) gets `readOffset` and
///   `seek(to:)` from it;
/// - a source that implements neither has no offset (nil) and refuses every move
///   (`.offsetUnsupported`). The defaults never call each other in a circle.
///
/// Say how a move costs in `offsetCapability` (`.seek`, `.readAndDiscard`, `.none`).
/// A source that wraps another reads it through `BlobUpstreamReader`, which moves the upstream by
/// the cheapest way it offers.
public protocol BlobDataSource: AnyObject {
    /// The observable values; the source sets them, everyone else reads and observes them.
    var state: BlobDataSourceState { get }

    /// The total number of bytes from offset 0, when known (a file's size, a member's size
    /// in its header). Nil when only reading to the end can tell (a gzip stream, a pipe).
    var length: Int64? { get }

    /// How the source reaches an offset (`seek(to:)`, `.fileCurrentOffsetKey`).
    var offsetCapability: BlobOffsetCapability { get }

    /// The offset of the next byte `read` returns (before `open`, where reading will
    /// start); nil when the source does not tell. The typed form of `.fileCurrentOffsetKey`:
    /// see "Offsets" above for the default.
    var readOffset: Int64? { get }

    /// Moves to `offset`: before `open`, reading starts there; after, the next `read`
    /// returns the byte at `offset`, at the cost `offsetCapability` says. Throws
    /// `.offsetUnsupported` when the source cannot move at all, `.invalidOffset` when it
    /// refuses this offset (past a known end, backward on a pipe); a refused move changes
    /// nothing and is not a failure of the source (`state.error` stays unset). An offset
    /// past an end the source does not know yet is accepted and fails the first `read`
    /// that finds the end. The typed form of `setProperty(_:forKey: .fileCurrentOffsetKey)`.
    func seek(to offset: Int64) throws(BlobStreamError)

    /// Where the source announces changes it makes outside of the owner's calls.
    var completionContext: BlobCompletionContext { get }

    /// What the source's own checks vouch for among the bytes it read: `.nothingToCheck`
    /// (the default: a plain file), or `.checked(upTo:)` the offset before which every byte
    /// was covered by a check that passed (a CRC-32 at a gzip member's end, say). A reader
    /// that stops before the end reads on to the next check point before it reports
    /// success (`BlobInputStream.readOnToCheckPoint()`, `BlobSliceDataSource`): a source
    /// with checks must say so here, or such a reader hands out bytes nothing checked.
    var verifiedPrefix: BlobVerifiedPrefix { get }

    /// Starts opening. May complete at once or later on `completionContext`; completion
    /// sets `state.isOpenCompleted` (or `state.error`).
    func open()

    /// Copies up to `maxLength` bytes (> 0) into `buffer`; returns how many (> 0), 0 at the
    /// end, −1 after setting `state.error`.
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int

    /// Lends the source's own buffer when it has bytes there: on true, `buffer` points at
    /// `length` (> 0) bytes that are consumed (as `read` would have returned them) and stay
    /// valid until the next call on the source. `false` (the default) when nothing is lent,
    /// and then nothing is consumed: the owner calls `read`, which also reports the end and
    /// errors. A source that never lends says so with `BlobLending.never(length)` (the
    /// default does) and is not asked again.
    func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>)
        -> Bool

    /// A property value; at least `.fileCurrentOffsetKey` (an `NSNumber` of the next byte's
    /// offset) for sources that support offsets.
    func property(forKey key: Stream.PropertyKey) -> Any?

    /// Sets a property; `.fileCurrentOffsetKey` before `open` starts there, after `open`
    /// moves there. Returns false when refused. Values arrive validated by the stream.
    func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool

    /// Releases resources. Further reads return −1.
    func close()

    /// Makes a `read` blocked in I/O on another thread (a pipe whose writer sends nothing)
    /// return soon with −1 and the error `.closed`, and every later one too. The one call
    /// that may come from any thread, at any time: `BlobInputStream.close()` makes it before
    /// it closes the source, so that closing a stream ends a read that waits on the kernel
    /// (contract rule 4). It must not wait for the read. Sources that wrap others pass it
    /// on. The default does nothing: most reads end on their own.
    func interrupt()
}

extension BlobDataSource {
    /// Unknown by default.
    public var length: Int64? { nil }
    /// `.none` by default.
    public var offsetCapability: BlobOffsetCapability { .none }
    /// `.caller` by default: the source announces changes only inside the owner's calls.
    public var completionContext: BlobCompletionContext { .caller }
    /// `.nothingToCheck` by default: the source checks nothing over its bytes.
    public var verifiedPrefix: BlobVerifiedPrefix { .nothingToCheck }
    /// `false`: no buffer to lend, ever (`BlobLending.never`: the stream stops asking).
    public func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>
    ) -> Bool { BlobLending.never(length) }
    /// `.fileCurrentOffsetKey`: `readOffset` as an `NSNumber` (when the source implements
    /// it); nil for every other key.
    public func property(forKey key: Stream.PropertyKey) -> Any? { offsetProperty(forKey: key) }
    /// `.fileCurrentOffsetKey`: `seek(to:)` (when the source implements it); refuses every
    /// other key.
    public func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        setOffsetProperty(property, forKey: key)
    }
    /// Does nothing: the source's reads end on their own.
    public func interrupt() {}

    /// `state.isOpenCompleted`.
    public var isOpenCompleted: Bool { state.isOpenCompleted }
    /// `state.hasBytesAvailable`.
    public var hasBytesAvailable: Bool { state.hasBytesAvailable }
    /// `state.isAtEnd`.
    public var isAtEnd: Bool { state.isAtEnd }
    /// `state.error`.
    public var error: (any Error)? { state.error }
}

/// Reads an offset value as handed to `setProperty(_:forKey: .fileCurrentOffsetKey)`.
public enum BlobOffset {
    /// The offset an `NSNumber` (or a Swift integer) holds, or nil when the value is not a
    /// non-negative integer.
    public static func value(from property: Any?) -> Int64? {
        switch property {
        case let n as Int: return n >= 0 ? Int64(n) : nil
        case let n as Int64: return n >= 0 ? n : nil
        case let n as UInt64: return n <= UInt64(Int64.max) ? Int64(n) : nil
        case let n as UInt: return UInt64(n) <= UInt64(Int64.max) ? Int64(n) : nil
        case let n as NSNumber:
            let d = n.doubleValue
            guard d >= 0, d.rounded() == d, d < 9.2e18 else { return nil }
            return n.int64Value
        default: return nil
        }
    }
}

extension Stream.PropertyKey {
    /// A key a source may answer with an opaque `String` that identifies the bytes it
    /// delivers: two sources that answer the same value deliver the same bytes. Files
    /// answer it once open (device, inode, size and change times); most sources answer
    /// nil.
    ///
    /// It lets a reader remember what it learned about a source's bytes for as long as the
    /// value stays the same (`ArchiveMemberDataSource` remembers where the members of an
    /// uncompressed tar start). Whoever uses it must still check what it reads: the value
    /// is a hint, not a checksum.
    public static let blobContentIdentityKey = Stream.PropertyKey("BlobStreamContentIdentity")

    /// A key a source may answer with a `String`, a sentence that names the source, saying
    /// why it cannot move back (why `offsetCapability` is not `.seek`) when that is not
    /// plain from its kind: an http(s) source whose server sent no strong ETag answers it
    /// once open. A reader that needed to seek puts it in its error; most sources answer nil.
    public static let blobOffsetLimitKey = Stream.PropertyKey("BlobStreamOffsetLimit")
}
