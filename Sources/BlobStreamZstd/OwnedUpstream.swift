import BlobStream
import Foundation
import Synchronization

/// A source whose open completes when its upstream's does (the zstd sources): it announces
/// its own open, or the upstream's failure to open, from `announceOpenIfReady`.
protocol UpstreamOpenAnnouncing: AnyObject, Sendable {
    /// Announces the open once the upstream's is done (nothing before, nothing twice).
    func announceOpenIfReady()
}

/// The upstream a zstd source owns, and where it stands: the reader over it, whether the
/// source was started (the upstream opened) or closed, and the relay that tells the source
/// when the upstream's open is done. The source calls it under its own lock, except
/// `interrupt()`, which is thread-safe.
final class OwnedUpstream: @unchecked Sendable {
    // Unchecked Sendable: `isStarted` and `isClosed` are guarded by the owner's lock; the
    // reader and the relay are thread-safe where used without it (`interrupt`, the relay's
    // queue); the rest is immutable.

    /// The reader over the upstream; owned: closed by `close()`, or when it goes.
    let reader: BlobUpstreamReader
    private let relay: UpstreamOpenRelay
    /// Whether `start()` ran (and the upstream was opened).
    private(set) var isStarted = false
    /// Whether `close()` ran.
    private(set) var isClosed = false

    /// Makes the reader over `upstream`; `label` names the queue announcements come from.
    init(_ upstream: any BlobDataSource, bufferSize: Int, label: String) {
        let relay = UpstreamOpenRelay(label: label)
        self.relay = relay
        self.reader = BlobUpstreamReader(upstream, bufferSize: bufferSize) { relay.upstreamChanged() }
    }

    /// Where the owner's announcements go (set once, in the owner's initializer).
    func announce(to owner: any UpstreamOpenAnnouncing) { relay.owner = owner }

    /// Started and not closed: reads may go on.
    var isReadable: Bool { isStarted && !isClosed }

    /// Whether the owner's open is settled: announced as opened or as failed.
    var isSettled: Bool { relay.isSettled }

    /// The upstream's context, with the queue the open is announced from.
    var completionContext: BlobCompletionContext { reader.completionContext.including(relay.queue) }

    /// Opens the upstream, once, holding the owner's `lock`, after `prepare` saw it; false
    /// when it was started or closed before.
    func start(locking lock: NSLock, preparing prepare: (any BlobDataSource) -> Void = { _ in }) -> Bool {
        lock.withLock {
            guard !isStarted, !isClosed else { return false }
            isStarted = true
            prepare(reader.source)
            reader.open()
            return true
        }
    }

    /// What the owner announces (see `UpstreamOpenRelay.outcome(of:name:)`); nothing before
    /// it was started and after it was closed.
    func outcome(name: String) -> UpstreamOpenRelay.Outcome {
        isReadable ? relay.outcome(of: reader, name: name) : .notYet
    }

    /// Ends a wait for the upstream's bytes, from any thread.
    func interrupt() { reader.interrupt() }

    /// Closes the upstream (opened or not), once: ends a wait for its bytes, then, holding
    /// the owner's `lock`, runs `tearDown` (the owner's own state, which may still use the
    /// reader) and closes it; nothing when it was closed before.
    func close(locking lock: NSLock, tearDown: () -> Void) {
        reader.interrupt()
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { return }
        isClosed = true
        tearDown()
        reader.close() // stops observing it
    }
}

/// Carries an upstream's announcements to the source that owns it, until the source's open
/// is settled: from a private queue, never from the upstream's thread, where a read of the
/// source (holding its lock) may be waiting to hear from the upstream.
final class UpstreamOpenRelay: @unchecked Sendable {
    // Unchecked Sendable: `owner` is set once, in the owner's initializer, before the
    // upstream is opened; `settled` is atomic; `queue` is immutable.

    /// Where the announcements go: part of the owner's completion context.
    let queue: DispatchQueue
    private let settled = Atomic<Bool>(false)
    /// The source, weakly (it owns the reader that holds this relay's observer).
    weak var owner: (any UpstreamOpenAnnouncing)?

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// The upstream reader's observer: an announcement of the upstream, passed on until the
    /// open is settled (later ones, its bytes, need nothing).
    func upstreamChanged() {
        guard owner != nil, !settled.load(ordering: .acquiring) else { return }
        queue.async { [weak self] in self?.owner?.announceOpenIfReady() }
    }

    /// Whether the owner's open is settled: announced as opened or as failed.
    var isSettled: Bool { settled.load(ordering: .acquiring) }

    /// What the owner announces, asked under its lock once it was started (and not closed):
    /// the upstream's failure to open, or its open, once (settling it); nothing before, and
    /// nothing once settled.
    func outcome(of reader: BlobUpstreamReader, name: String) -> Outcome {
        guard !isSettled else { return .notYet }
        if let error = reader.error {
            settled.store(true, ordering: .releasing)
            return .failed(
                BlobStreamError(
                    (error as? BlobStreamError)?.code ?? .sourceFailed,
                    "\(name): the upstream failed to open: \(error)",
                    cause: error))
        }
        guard reader.isOpenCompleted else { return .notYet }
        settled.store(true, ordering: .releasing)
        return .opened
    }

    /// See `outcome(of:name:)`.
    enum Outcome {
        case notYet
        case opened
        case failed(BlobStreamError)

        /// Tells the owner's observers, after its lock is released.
        func announce(on state: BlobDataSourceState) {
            switch self {
            case .notYet: break
            case .failed(let error): state.error = error
            case .opened:
                state.isOpenCompleted = true
                state.hasBytesAvailable = true
            }
        }
    }
}
