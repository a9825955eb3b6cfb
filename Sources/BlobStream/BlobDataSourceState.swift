import Foundation
import Synchronization

/// A snapshot of the four observable values of a data source.
///
/// `BlobObservable` names each of them for observation: `source.observe(.isAtEnd) { change in … }`.
public struct BlobDataSourceStatus: Sendable {
    /// The source finished opening (it may then have bytes, be at its end, or fail later).
    public var isOpenCompleted = false
    /// A `read` would return bytes now without waiting for anything.
    public var hasBytesAvailable = false
    /// Every byte has been read; `read` returns 0 from now on.
    public var isAtEnd = false
    /// The source failed; sticky: once set it never changes again.
    public var error: (any Error)? = nil

    /// The default snapshot: not open, no bytes, not at end, no error.
    public init() {}
}

/// Which of the values of `BlobDataSourceStatus` to hand to an observer.
public struct BlobObservationOptions: OptionSet, Sendable {
    /// The options as bits.
    public let rawValue: Int
    /// Makes options from their bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Call the handler once at registration with the current value (as `newValue`).
    public static let initial = BlobObservationOptions(rawValue: 1)
    /// Fill in `oldValue`.
    public static let old = BlobObservationOptions(rawValue: 2)
    /// Fill in `newValue`.
    public static let new = BlobObservationOptions(rawValue: 4)
}

/// One change of an observed value, as KVO's `NSKeyValueObservedChange`.
public struct BlobObservedChange<Value: Sendable>: Sendable {
    /// The value before the change, when `.old` was asked for (nil for the initial call).
    public let oldValue: Value?
    /// The value after the change, when `.new` or `.initial` was asked for.
    public let newValue: Value?
    /// True for the call made at registration because of `.initial`.
    public let isInitial: Bool
}

/// A subscription to one value of a data source. It ends when `invalidate()` is called or
/// when the token is released, whichever comes first; after that the handler is never
/// called again (a call already running on another thread finishes).
public final class BlobObservation: Sendable {
    private let entry: ObserverEntry
    private weak let owner: BlobDataSourceState?

    fileprivate init(entry: ObserverEntry, owner: BlobDataSourceState) {
        self.entry = entry
        self.owner = owner
    }

    /// Ends the subscription. Safe from any thread, more than once, and from inside the
    /// handler itself.
    public func invalidate() {
        entry.active.store(false, ordering: .releasing)
        owner?.remove(entry)
    }

    deinit { invalidate() }
}

/// A registered observer of the value whose flag is `bit`. `active` is checked right before
/// each call so that an invalidation on another thread wins over a delivery already
/// collected.
private final class ObserverEntry: Sendable {
    let id: Int
    let bit: UInt8
    let active = Atomic<Bool>(true)
    let deliver: @Sendable (BlobDataSourceStatus, BlobDataSourceStatus) -> Void

    init(id: Int, bit: UInt8, deliver: @escaping @Sendable (BlobDataSourceStatus, BlobDataSourceStatus) -> Void) {
        self.id = id
        self.bit = bit
        self.deliver = deliver
    }
}

/// The observable state of a data source: the four values of the contract, and the
/// observers subscribed to them. Every source owns one (`BlobDataSource.state`) and sets its
/// values; the stream and any other client observe them.
///
/// - Reading a value is a lock-free atomic load (the stream does it on every `read`).
/// - Setting a value equal to the current one announces nothing and takes no lock.
/// - Observers of a value are called after it changed, outside any lock, on the thread that
///   made the change; they may register or invalidate observations from inside the call.
/// - `error` is sticky: the first error stays, later ones are ignored.
public final class BlobDataSourceState: Sendable {
    private struct Registry {
        var nextID = 0
        var observers: [Int: ObserverEntry] = [:]
        var error: (any Error)?
    }

    static let openBit: UInt8 = 1, bytesBit: UInt8 = 2, endBit: UInt8 = 4, errorBit: UInt8 = 8

    private let flags = Atomic<UInt8>(0)
    /// How many times `hasBytesAvailable` turned true. Counted before the new value is
    /// stored, so whoever sees the value true also sees the count moved: the stream tells a
    /// read of 0 that went quiet and was announced again from the end by it, without
    /// waiting for its observer (which runs later, maybe after other observers).
    private let bytesTurns = Atomic<Int>(0)
    private let registry = Locked(Registry())

    /// A fresh state: not open, no bytes, not at end, no error.
    public init() {}

    /// The source finished opening. Set it once `read` may be called.
    public var isOpenCompleted: Bool {
        get { flag(Self.openBit) }
        set { setFlag(Self.openBit, newValue) }
    }

    /// A `read` would return bytes now. Keep it true while bytes remain and nothing has to
    /// be waited for (a file keeps it true until its end).
    public var hasBytesAvailable: Bool {
        get { flag(Self.bytesBit) }
        set { setFlag(Self.bytesBit, newValue) }
    }

    /// Every byte has been delivered. Setting it also clears `hasBytesAvailable`.
    public var isAtEnd: Bool {
        get { flag(Self.endBit) }
        set {
            if newValue { hasBytesAvailable = false }
            setFlag(Self.endBit, newValue)
        }
    }

    /// The error that stopped the source. Sticky: once set, later assignments are ignored.
    /// Setting it also clears `hasBytesAvailable`.
    public var error: (any Error)? {
        get { flag(Self.errorBit) ? registry.withLock { $0.error } : nil }
        set {
            guard let newValue, !flag(Self.errorBit) else { return }
            hasBytesAvailable = false
            let (old, new, observers) =
                registry.withLock { reg -> (BlobDataSourceStatus, BlobDataSourceStatus, [ObserverEntry])? in
                    guard reg.error == nil else { return nil }
                    let old = snapshot(reg)
                    reg.error = newValue
                    flags.bitwiseOr(Self.errorBit, ordering: .acquiringAndReleasing)
                    return (
                        old, snapshot(reg), reg.observers.values.filter { $0.bit == Self.errorBit }
                    )
                } ?? (BlobDataSourceStatus(), BlobDataSourceStatus(), [])
            announce(observers, old, new)
        }
    }

    /// How many times `hasBytesAvailable` has turned true (see `bytesTurns`). Read it
    /// after `hasBytesAvailable`.
    var bytesAvailableTurns: Int { bytesTurns.load(ordering: .acquiring) }

    /// Says what a `read` returned, before the caller sees it: 0 is the end, a negative
    /// count is `failure` (or, with none recorded, `name` closed). For the package's sources,
    /// which release their lock first.
    package func announceRead(_ count: Int, failure: BlobStreamError?, name: String) {
        if count == 0 {
            isAtEnd = true
        } else if count < 0 {
            error = failure ?? BlobStreamError(.closed, "\(name): closed")
        }
    }

    /// How many subscriptions are registered (for the package's tests).
    package var observerCount: Int { registry.withLock { $0.observers.count } }

    /// All four values at once.
    public var status: BlobDataSourceStatus { registry.withLock { snapshot($0) } }

    /// Subscribes to one value. See `BlobObservation` for how a subscription ends.
    ///
    /// ```swift
    /// let token = state.observe(.hasBytesAvailable, options: [.initial, .new]) { change in
    ///     if change.newValue == true { wakeReader() }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - value: `.isOpenCompleted`, `.hasBytesAvailable`, `.isAtEnd` or `.error`.
    ///   - options: `.initial` calls the handler at once with the current value; `.old` and
    ///     `.new` choose which values a change carries.
    ///   - handler: called on the thread that made the change, outside any lock.
    public func observe<Value>(
        _ value: BlobObservable<Value>,
        options: BlobObservationOptions = [.new],
        _ handler: @escaping @Sendable (BlobObservedChange<Value>) -> Void
    ) -> BlobObservation {
        let wantOld = options.contains(.old)
        let wantNew = options.contains(.new)
        let extract = value.extract
        let (entry, current) = registry.withLock { reg -> (ObserverEntry, BlobDataSourceStatus) in
            reg.nextID += 1
            let entry = ObserverEntry(id: reg.nextID, bit: value.bit) { old, new in
                handler(
                    BlobObservedChange(
                        oldValue: wantOld ? extract(old) : nil, newValue: wantNew ? extract(new) : nil,
                        isInitial: false))
            }
            reg.observers[entry.id] = entry
            return (entry, snapshot(reg))
        }
        let token = BlobObservation(entry: entry, owner: self)
        if options.contains(.initial) {
            handler(BlobObservedChange(oldValue: nil, newValue: extract(current), isInitial: true))
        }
        return token
    }

    fileprivate func remove(_ entry: ObserverEntry) {
        _ = registry.withLock { $0.observers.removeValue(forKey: entry.id) }
    }

    // MARK: - Internals

    private func flag(_ bit: UInt8) -> Bool { flags.load(ordering: .acquiring) & bit != 0 }

    private func snapshot(_ reg: Registry) -> BlobDataSourceStatus {
        let bits = flags.load(ordering: .acquiring)
        var s = BlobDataSourceStatus()
        s.isOpenCompleted = bits & Self.openBit != 0
        s.hasBytesAvailable = bits & Self.bytesBit != 0
        s.isAtEnd = bits & Self.endBit != 0
        s.error = reg.error
        return s
    }

    private func setFlag(_ bit: UInt8, _ value: Bool) {
        guard flag(bit) != value else { return } // no change: no lock, no announcement
        let change = registry.withLock { reg -> (BlobDataSourceStatus, BlobDataSourceStatus, [ObserverEntry])? in
            guard (flags.load(ordering: .acquiring) & bit != 0) != value else { return nil }
            let old = snapshot(reg)
            if value {
                if bit == Self.bytesBit { bytesTurns.wrappingAdd(1, ordering: .releasing) }
                flags.bitwiseOr(bit, ordering: .acquiringAndReleasing)
            } else {
                flags.bitwiseAnd(~bit, ordering: .acquiringAndReleasing)
            }
            let observers = reg.observers.isEmpty ? [] : reg.observers.values.filter { $0.bit == bit }
            return (old, snapshot(reg), observers)
        }
        if let (old, new, observers) = change { announce(observers, old, new) }
    }

    private func announce(_ observers: [ObserverEntry], _ old: BlobDataSourceStatus, _ new: BlobDataSourceStatus) {
        for entry in observers.sorted(by: { $0.id < $1.id }) where entry.active.load(ordering: .acquiring) {
            entry.deliver(old, new)
        }
    }
}
