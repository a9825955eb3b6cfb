import Foundation

/// A byte range of any source: `length` bytes of `upstream` from `offset` on (or every byte
/// from `offset` to the upstream's end). A small source on the kit: it reads through a
/// `BlobUpstreamReader`, which moves to the range's start by the cheapest way the upstream offers.
///
/// ```swift
/// let header = BlobSliceDataSource(upstream: FileDataSource(path: "/data/video.mp4"), offset: 0, length: 4096)
/// let stream = BlobInputStream(dataSource: header)
/// ```
///
/// - An upstream that ends before the range does is an error (`.truncated`), never a clean
///   short end, even for a range that runs to the upstream's end and starts past it.
/// - Offsets are within the range: `seek(to:)` (and `.fileCurrentOffsetKey`) moves the
///   upstream to `offset + n`; `offsetCapability` is the upstream's (`.readAndDiscard` over
///   one that cannot move at all: forward moves discard).
/// - Asynchronous upstreams: the slice completes its open and announces bytes when the
///   upstream does; its `completionContext` is the upstream's.
/// - Ownership: the slice owns its upstream: `open()` opens it, `close()` closes it.
/// - Errors: the upstream's own error is handed on as it is.
/// - Verification: a range that stops before the upstream's end ends only once every byte
///   it delivered is covered by a check of the upstream that passed: over a gzip stream or
///   an archive member (`verifiedPrefix` says `.checked(upTo:)`) the slice reads on,
///   without delivering, to the upstream's next check point (a gzip member's end, an index
///   chunk's end, a member's CRC-32) and fails if the check does. Over a source with
///   nothing to check (a file: `.nothingToCheck`) it ends at the range's end and reads
///   nothing more. `verification: .unverified` ends at the range's end whatever the
///   upstream checks: the bytes may then be wrong with a clean end.
public final class BlobSliceDataSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: `position`, `opened` and `upstream`'s reading are the owner's
    // (one call at a time); the upstream's observers touch only `state` (thread-safe) and
    // the upstream's state.

    /// The observable state.
    public let state = BlobDataSourceState()
    /// The upstream offset where the range starts.
    public let start: Int64
    /// The range's length as given (nil: to the upstream's end).
    public let rangeLength: Int64?
    /// How errors name the slice.
    public let name: String
    /// Whether the range's end waits for the upstream's next check point.
    public let verification: Verification

    /// Whether a slice that stops before the upstream's end reads on to the upstream's next
    /// check point before it ends (see "Verification").
    public enum Verification: Sendable, Equatable {
        /// Read on, without delivering, until every byte delivered is covered by a check
        /// that passed (nothing more over a source with nothing to check).
        case checkedPrefix
        /// End at the range's end: the bytes are not verified by the upstream's checks.
        case unverified
    }

    private let upstream: BlobUpstreamReader
    /// The offset within the range of the next byte.
    private var position: Int64 = 0
    private var opened = false

    /// Makes a slice of `upstream`.
    ///
    /// - Parameters:
    ///   - upstream: the source, not opened yet; the slice opens and closes it.
    ///   - offset: where the range starts in the upstream (≥ 0).
    ///   - length: how many bytes (≥ 0); nil for every byte to the upstream's end.
    ///   - name: how errors name the slice; by default the range and the upstream's type.
    ///   - verification: `.checkedPrefix` (the default) reads on to the upstream's next check
    ///     point before the range's end is announced; `.unverified` does not.
    public init(
        upstream: any BlobDataSource, offset: Int64, length: Int64?, name: String? = nil,
        verification: Verification = .checkedPrefix
    ) {
        self.verification = verification
        precondition(offset >= 0, "offset must not be negative")
        precondition((length ?? 0) >= 0, "length must not be negative")
        self.start = offset
        self.rangeLength = length
        let range = length.map { "\(offset)..<\(offset + $0)" } ?? "\(offset)..."
        self.name = name ?? "bytes \(range) of \(type(of: upstream))"
        let state = self.state
        let box = WeakUpstream()
        self.upstream = BlobUpstreamReader(upstream, minimumReadSize: 16 * 1024) { box.changed(state) }
        box.upstream = self.upstream
    }

    /// `rangeLength`, or what is left of the upstream's length after `offset`.
    public var length: Int64? {
        if let rangeLength { return rangeLength }
        return upstream.length.map { max($0 - start, 0) }
    }

    /// The upstream's, except `.readAndDiscard` over an upstream that cannot move at all.
    public var offsetCapability: BlobOffsetCapability {
        upstream.offsetCapability == .seek ? .seek : .readAndDiscard
    }

    /// The upstream's.
    public var completionContext: BlobCompletionContext { upstream.completionContext }

    /// The upstream's, in the range's offsets: `.nothingToCheck` when it checks nothing (or
    /// the slice is `.unverified`), else how much of the range its checks covered.
    public var verifiedPrefix: BlobVerifiedPrefix {
        guard verification == .checkedPrefix, case .checked(let upTo) = upstream.source.verifiedPrefix else {
            return .nothingToCheck
        }
        let covered = max(0, upTo - start)
        return .checked(upTo: rangeLength.map { min($0, covered) } ?? covered)
    }

    /// Every byte of the range up to `position` is covered by a check that passed, or
    /// there is nothing to read on to.
    private var isPositionVerified: Bool {
        verification == .unverified || upstream.source.verifiedPrefix.covers(start + position)
    }

    /// The offset within the range of the next byte.
    public var readOffset: Int64? { position }

    /// Moves within the range; past a known length is refused (`.invalidOffset`).
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else { throw BlobStreamError(.invalidOffset, "offset \(offset) is negative") }
        if let length, offset > length {
            throw BlobStreamError(.invalidOffset, "\(name): offset \(offset) is past the end (\(length) bytes)")
        }
        try upstream.seek(to: start + offset)
        position = offset
        if state.isOpenCompleted && state.error == nil {
            state.isAtEnd = false
            announceReadiness()
        }
    }

    /// Opens the upstream at the range's start.
    public func open() {
        guard !opened else { return }
        opened = true
        do {
            try upstream.seek(to: start + position)
        } catch {
            // Refused before open: the upstream knows it is shorter than that.
            state.error =
                error.code == .invalidOffset
                ? BlobStreamError(
                    .truncated, "\(name): the upstream refused offset \(start + position) (it ends before)",
                    cause: error)
                : error
            return
        }
        upstream.open()
        if let error = upstream.error {
            state.error = error
        } else if upstream.isOpenCompleted {
            state.isOpenCompleted = true
            announceReadiness()
        } else if !upstream.isAsynchronous {
            state.error = BlobStreamError(
                .sourceFailed, "\(name): the upstream says it completes inside its calls but did not complete its open")
        }
    }

    /// Reads up to `maxLength` bytes of the slice from the upstream source; never past the slice's end.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if state.error != nil { return -1 }
        var wanted = maxLength
        if let rangeLength {
            let remaining = rangeLength - position
            if remaining <= 0 { return readOnToCheckPoint() }
            wanted = Int(min(Int64(maxLength), remaining))
        }
        let result = upstream.read(into: buffer, maxLength: wanted)
        switch result {
        case .bytes(let n):
            position += Int64(n)
            if let rangeLength, position == rangeLength, isPositionVerified { state.isAtEnd = true }
            return n
        case .end:
            let reached = upstream.offset
            if rangeLength != nil || reached < start {
                let expected = rangeLength.map { "\(start + $0)" } ?? "\(start)"
                state.error = BlobStreamError(
                    .truncated, "\(name): the upstream ends at offset \(reached), before offset \(expected)")
                return -1
            }
            if reached < start + position {
                // A move past an end not known when it was made (contract: fails here).
                state.error = BlobStreamError(
                    .invalidOffset, "\(name): offset \(position) is past the end (\(reached - start) bytes)")
                return -1
            }
            return atEnd()
        case .starved, .failed: return stopped(result)
        }
    }

    /// The end of the slice: 0, announced.
    private func atEnd() -> Int {
        state.isAtEnd = true
        return 0
    }

    /// A read that found nothing now (`.starved`: wait for the upstream) or failed (−1).
    private func stopped(_ result: BlobUpstreamReader.Read) -> Int {
        if case .failed(let error) = result {
            state.error = error
            return -1
        }
        return waitForUpstream()
    }

    /// At the range's end: reads the upstream on, discarding, until its checks cover the
    /// range (`verifiedPrefix`) or it ends cleanly; 0 at the end, −1 when a check fails.
    private func readOnToCheckPoint() -> Int {
        guard !isPositionVerified else { return atEnd() }
        let size = 64 * 1024
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer { scratch.deallocate() }
        while !isPositionVerified {
            let result = upstream.read(into: scratch, maxLength: size)
            switch result {
            case .bytes: continue
            case .end: return atEnd()
            case .starved, .failed: return stopped(result)
            }
        }
        return atEnd()
    }

    /// Nothing yet (contract rule 2): `hasBytesAvailable` false until the upstream's next
    /// announcement; 0.
    private func waitForUpstream() -> Int {
        state.hasBytesAvailable = false
        announceReadiness()
        return 0
    }

    /// Passes the interruption on to the upstream.
    public func interrupt() { upstream.interrupt() }

    /// Closes the upstream.
    public func close() { upstream.close() }

    /// `hasBytesAvailable` once the upstream has bytes, its end or its error to hand out.
    private func announceReadiness() {
        if upstream.isUpstreamReady || upstream.bufferedCount > 0 { state.hasBytesAvailable = true }
    }
}

/// What the upstream's observers reach: the reader, weakly (it owns them).
private final class WeakUpstream: @unchecked Sendable {
    // Unchecked Sendable: `upstream` is set once, before the upstream is opened.
    weak var upstream: BlobUpstreamReader?

    /// After an announcement of the upstream: completes the open, hands on its error, or
    /// announces bytes. Touches only thread-safe state.
    func changed(_ state: BlobDataSourceState) {
        guard let upstream, state.error == nil, !state.isAtEnd else { return }
        if let error = upstream.source.error {
            state.error = error
            return
        }
        if !state.isOpenCompleted {
            guard upstream.isOpenCompleted else { return }
            state.isOpenCompleted = true
        }
        if upstream.isUpstreamReady { state.hasBytesAvailable = true }
    }
}
