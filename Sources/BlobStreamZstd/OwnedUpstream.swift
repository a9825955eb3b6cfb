import BlobStream
import Foundation
import Synchronization

/// A source whose open completes when its upstream's does (the zstd sources): it announces
/// its own open, or the upstream's failure to open, from `announceOpenIfReady`.
protocol UpstreamOpenAnnouncing: AnyObject, Sendable {
    /// Announces the open once the upstream's is done (nothing before, nothing twice).
    func announceOpenIfReady()
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

    /// What the owner announces, asked under its lock once it was started and has not
    /// announced yet: the upstream's failure to open (settled), its open (settled), or
    /// nothing yet.
    func outcome(of reader: BlobUpstreamReader, name: String) -> Outcome {
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
    }
}
