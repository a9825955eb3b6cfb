import BlobStream
import Foundation

/// A data source that inflates a gzip stream read from any upstream source: a file, a file
/// handle or pipe, an archive member, a source of your own.
///
/// ```swift
/// let gz = GzipDataSource(upstream: FileDataSource(path: "/var/log/syslog.1.gz"))
/// let stream = BlobInputStream(dataSource: gz)
/// ```
///
/// ## What it checks
/// - Every member of a multi-member file (`cat a.gz b.gz`) is inflated in turn; headers with
///   FEXTRA, FNAME, FCOMMENT and FHCRC are accepted and the header CRC is checked.
/// - Every member's CRC-32 and ISIZE are checked.
/// - Input that ends before the last member's trailer (including an empty input) fails with
///   `.truncated`; bad magic, a bad header CRC, a bad CRC-32 or ISIZE and corrupt deflate
///   data fail with `.corrupt` and a `ZlibError` as the cause. Both name the source and the
///   offset in the compressed bytes. Neither is ever a clean end; errors are sticky.
/// - Trailing bytes after the last member: zero bytes are ignored, as `gzip -d` does (tape
///   and block padding); anything else fails with `.corrupt` (never silently ignored).
///
/// ## Ownership
/// The gzip source owns its upstream (unlike Go's `gzip.Reader`): its `open()` opens the
/// upstream, its `close()` (or its deinitialization) closes it, opened or not. Hand it an
/// unopened upstream and do not call the upstream yourself afterwards.
///
/// ## Offsets
/// `.fileCurrentOffsetKey` is an offset in the decompressed bytes (`offsetCapability` is
/// `.readAndDiscard`): moving forward inflates and discards; moving backward restarts from
/// the first byte, which needs an upstream that accepts `.fileCurrentOffsetKey` 0 (a file,
/// an in-memory source) and is refused otherwise (a pipe). An offset past the end fails
/// with `.invalidOffset` at the read that finds the end. `length` is nil (a gzip trailer
/// only holds each member's size modulo 2³²) unless given to the initializer.
///
/// ## Asynchronous upstreams
/// Over an upstream that announces bytes later (`completionContext` other than `.caller`:
/// a network source, a scripted test source), the source completes its open when the
/// upstream does and inflates ahead into a 64 KiB buffer so that `hasBytesAvailable` is
/// true only when a `read` really has bytes to hand out (a `read` must never return 0 before
/// the end, and must never wait). It reacts to the upstream's announcements on a private
/// queue, which its `completionContext` covers together with the upstream's. Over a
/// synchronous upstream (`.caller`) it inflates straight into the caller's buffer.
public final class GzipDataSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: every mutable stored property is guarded by `lock`; `state` is
    // thread-safe itself; the rest is immutable.

    /// The URL scheme this source is registered under (by whoever registers it).
    public static let scheme = "gzip"

    /// The default size of the buffer compressed bytes are read into.
    public static let defaultInputBufferSize = 128 * 1024

    /// The observable state.
    public let state = BlobDataSourceState()

    /// The source of the compressed bytes; owned (opened and closed) by this source.
    public let upstream: any BlobDataSource

    /// The name used in error messages.
    public let name: String

    private let knownLength: Int64?
    /// Inflate ahead into `lookahead` (asynchronous upstream) instead of into the caller's
    /// buffer.
    private let buffered: Bool
    private let probeQueue = DispatchQueue(label: "BlobStreamGzip.GzipDataSource.probe")
    private let inputCapacity: Int
    private let lock = NSLock()
    private let announceLock = NSRecursiveLock()

    // MARK: Guarded by `lock`

    private var started = false
    /// What `state` should say; `publish()` copies it there with no lock held.
    private var desired = BlobDataSourceStatus() { didSet { desiredGeneration &+= 1 } }
    private var desiredGeneration = 0
    private var closed = false
    private var failure: BlobStreamError?
    private var observations: [BlobObservation] = []
    private var inflater: Inflater?

    /// Compressed bytes read from upstream: `input[inStart..<inEnd]` are not consumed yet.
    private var input: UnsafeMutableRawPointer?
    private var inStart = 0, inEnd = 0
    /// The compressed offset of `input[0]`.
    private var inputBase: Int64 = 0
    /// The upstream reached its end (the bytes in `input` may still be unconsumed).
    private var upstreamEnded = false

    private enum Phase {
        /// Inside a member: zlib has the bytes.
        case member
        /// A member ended: the next byte starts a member, padding, or is the end.
        case between
        /// Trailing zero bytes after the last member.
        case padding
        /// The end of the last member (and of any padding) was found at the upstream's end.
        case finished
    }
    private var phase = Phase.member
    private var memberIndex = 0
    private var memberStart: Int64 = 0

    /// Decompressed bytes produced by zlib so far (delivered, looked ahead or discarded).
    private var inflated: Int64 = 0
    /// The offset of the next byte to deliver. `inflated - lookCount` when bytes are looked
    /// ahead; otherwise at or beyond `inflated` (the bytes between are to be discarded).
    private var target: Int64 = 0

    private static let lookaheadCapacity = 64 * 1024
    private var lookahead: UnsafeMutablePointer<UInt8>?
    private var lookStart = 0, lookEnd = 0
    private var lookCount: Int { lookEnd - lookStart }

    private static let scratchCapacity = 64 * 1024
    private var scratch: UnsafeMutablePointer<UInt8>?

    /// Makes a source that inflates `upstream`.
    ///
    /// - Parameters:
    ///   - upstream: the compressed bytes, not opened yet; this source opens and closes it.
    ///   - length: the decompressed length when the caller knows it (reported as `length`);
    ///     nil by default.
    ///   - name: how errors name the source; by default `"gzip stream over <upstream type>"`.
    ///   - inputBufferSize: how many compressed bytes one upstream read asks for.
    public init(
        upstream: any BlobDataSource, length: Int64? = nil, name: String? = nil,
        inputBufferSize: Int = GzipDataSource.defaultInputBufferSize
    ) {
        precondition(inputBufferSize > 0, "inputBufferSize must be positive")
        self.upstream = upstream
        self.knownLength = length
        self.name = name ?? "gzip stream over \(type(of: upstream))"
        self.inputCapacity = inputBufferSize
        if case .caller = upstream.completionContext { buffered = false } else { buffered = true }
    }

    deinit {
        if !closed { upstream.close() }
        freeResources()
    }

    // MARK: - BlobDataSource

    /// The decompressed length given to the initializer, or nil.
    public var length: Int64? { knownLength }

    /// `.readAndDiscard`: forward by inflating and discarding, backward by restarting (when
    /// the upstream can move to offset 0).
    public var offsetCapability: BlobOffsetCapability { .readAndDiscard }

    /// `.caller` over a synchronous upstream; otherwise the upstream's context or this
    /// source's private queue.
    public var completionContext: BlobCompletionContext {
        let up = upstream.completionContext
        if case .caller = up { return .caller }
        let probe = BlobCompletionContext.queue(probeQueue)
        return .custom { up.isCurrent || probe.isCurrent }
    }

    /// Opens the upstream; completes when the upstream has opened (at once for a
    /// synchronous upstream, later on its queue otherwise).
    public func open() {
        lock.lock()
        openLocked()
        lock.unlock()
        publish()
    }

    private func openLocked() {
        guard !started, !closed else { return }
        started = true
        do {
            inflater = try Inflater()
        } catch {
            fail(BlobStreamError(.sourceFailed, "\(name): cannot initialize zlib", cause: error))
            return
        }
        if buffered {
            let poke: @Sendable () -> Void = { [weak self] in
                guard let self else { return }
                self.probeQueue.async { [weak self] in self?.upstreamChanged() }
            }
            observations = [
                upstream.observe(\.isOpenCompleted) { change in if change.newValue == true { poke() } },
                upstream.observe(\.hasBytesAvailable) { change in if change.newValue == true { poke() } },
                upstream.observe(\.isAtEnd) { change in if change.newValue == true { poke() } },
                upstream.observe(\.error) { _ in poke() },
            ]
        }
        upstream.open()
        finishOpenIfReady()
    }

    /// Inflates up to `maxLength` bytes into `buffer`.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        lock.lock()
        let n = readLocked(buffer, maxLength: maxLength)
        let error = failure
        lock.unlock()
        // The stream looks at the state as soon as this returns: a 0 comes with the end and
        // a -1 with the error (both final, so set at once; `publish` brings the rest).
        if n == 0 {
            state.isAtEnd = true
        } else if n < 0, let error {
            state.error = error
        }
        publish()
        return n
    }

    private func readLocked(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard !closed, started, failure == nil, maxLength > 0 else { return failure == nil && maxLength <= 0 ? 0 : -1 }
        if lookCount > 0 {
            let n = min(maxLength, lookCount)
            buffer.update(from: lookahead! + lookStart, count: n)
            lookStart += n
            target += Int64(n)
            refreshAvailability()
            return n
        }
        switch pump(into: buffer, capacity: maxLength) {
        case .bytes(let n):
            target += Int64(n)
            refreshAvailability()
            return n
        case .end:
            desired.isAtEnd = true
            desired.hasBytesAvailable = false
            return 0
        case .failed:
            return -1
        case .starved:
            fail(
                BlobStreamError(
                    .sourceFailed,
                    "\(name): read was called while the upstream has no bytes available at compressed offset \(compressedOffset) (the upstream announced bytes it does not have, or the owner broke contract rule 2)"
                ))
            return -1
        }
    }

    /// `.fileCurrentOffsetKey`: the decompressed offset of the next byte.
    public func property(forKey key: Stream.PropertyKey) -> Any? {
        guard key == .fileCurrentOffsetKey else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return NSNumber(value: target)
    }

    /// `.fileCurrentOffsetKey`: moves to a decompressed offset (see "Offsets" above).
    public func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let offset = BlobOffset.value(from: property) else { return false }
        lock.lock()
        let ok = setOffsetLocked(offset)
        lock.unlock()
        publish()
        return ok
    }

    private func setOffsetLocked(_ offset: Int64) -> Bool {
        if closed || failure != nil { return false }
        if let knownLength, offset > knownLength { return false }
        guard started else {
            target = offset // inflated is 0: the first reads discard up to here
            return true
        }
        let windowStart = lookCount > 0 ? target : inflated
        if offset >= windowStart {
            if lookCount > 0 && offset <= inflated {
                lookStart += Int(offset - target)
            } else {
                lookStart = 0
                lookEnd = 0
            }
            target = offset
        } else {
            guard restartUpstream() else { return false }
            target = offset
        }
        guard desired.isOpenCompleted else { return true }
        if desired.isAtEnd && !(phase == .finished && lookCount == 0 && target == inflated) {
            desired.isAtEnd = false
        }
        refreshAvailability()
        return true
    }

    /// Passes the interruption on to the upstream, where a read may be blocked.
    public func interrupt() { upstream.interrupt() }

    /// Closes the upstream and frees zlib's state and the buffers. Further reads return −1.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        let tokens = observations
        observations = []
        for token in tokens { token.invalidate() }
        upstream.close() // owned, opened or not
        freeResources()
    }

    // MARK: - Internals (all with `lock` held)

    private var compressedOffset: Int64 { inputBase + Int64(inStart) }

    /// Copies `desired` to `state` with `lock` released, so that observers run outside it
    /// (they may call back into this source). Announcements are serialized by
    /// `announceLock` (recursive: an observer may call back on the same thread), and each
    /// round copies the latest values, again while they changed meanwhile, so that when an
    /// owner's call returns, `state` says what the next call will find.
    private func publish() {
        announceLock.lock()
        defer { announceLock.unlock() }
        while true {
            lock.lock()
            let d = desired
            let generation = desiredGeneration
            lock.unlock()
            if let error = d.error {
                state.error = error
            } else {
                if d.isOpenCompleted { state.isOpenCompleted = true }
                if d.isAtEnd {
                    state.isAtEnd = true
                } else {
                    state.isAtEnd = false
                    state.hasBytesAvailable = d.hasBytesAvailable
                }
            }
            lock.lock()
            let changed = desiredGeneration != generation
            lock.unlock()
            if !changed { return }
        }
    }

    private func freeResources() {
        inflater?.end()
        inflater = nil
        input?.deallocate()
        input = nil
        lookahead?.deallocate()
        lookahead = nil
        scratch?.deallocate()
        scratch = nil
        lookStart = 0
        lookEnd = 0
    }

    private func fail(_ error: BlobStreamError) {
        if failure == nil { failure = error }
        lookStart = 0
        lookEnd = 0
        desired.error = failure
    }

    /// Called on `probeQueue` after the upstream announced something.
    private func upstreamChanged() {
        lock.lock()
        upstreamChangedLocked()
        lock.unlock()
        publish()
    }

    private func upstreamChangedLocked() {
        guard started, !closed, failure == nil else { return }
        if !desired.isOpenCompleted {
            finishOpenIfReady()
        } else if lookCount == 0 && !desired.hasBytesAvailable && !desired.isAtEnd {
            refreshAvailability()
        }
    }

    private func finishOpenIfReady() {
        guard !desired.isOpenCompleted, failure == nil, !closed else { return }
        if let error = upstream.error {
            fail(wrapUpstream(error, "failed to open"))
        } else if upstream.isOpenCompleted {
            desired.isOpenCompleted = true
            // Inflate the first bytes now, whatever the upstream: an empty payload is at its
            // end right after open, and a stream that is not gzip at all fails at open.
            probe()
        }
    }

    /// Sets `hasBytesAvailable` / `isAtEnd` to what the next `read` will find. Over an
    /// asynchronous upstream this inflates ahead, so that `hasBytesAvailable` never promises
    /// bytes that depend on an upstream announcement still to come.
    private func refreshAvailability() {
        guard failure == nil, !closed, desired.isOpenCompleted else { return }
        if lookCount > 0 {
            desired.hasBytesAvailable = true
        } else if phase == .finished {
            if target == inflated {
                desired.isAtEnd = true
                desired.hasBytesAvailable = false
            } else {
                desired.hasBytesAvailable = true // the next read reports the offset past the end
            }
        } else if !buffered {
            desired.hasBytesAvailable = true // a synchronous upstream answers every read
        } else {
            probe()
        }
    }

    /// Inflates ahead into `lookahead` and announces what that found.
    private func probe() {
        if lookahead == nil { lookahead = .allocate(capacity: Self.lookaheadCapacity) }
        switch pump(into: lookahead!, capacity: Self.lookaheadCapacity) {
        case .bytes(let n):
            lookStart = 0
            lookEnd = n
            desired.hasBytesAvailable = true
        case .end:
            desired.isAtEnd = true
            desired.hasBytesAvailable = false
        case .failed:
            break
        case .starved:
            desired.hasBytesAvailable = false // the upstream's next announcement probes again
        }
    }

    /// Moves the upstream back to its first byte and starts inflating again.
    private func restartUpstream() -> Bool {
        guard upstream.offsetCapability != .none,
            upstream.setProperty(NSNumber(value: 0), forKey: .fileCurrentOffsetKey)
        else { return false }
        inflater?.reset()
        inStart = 0
        inEnd = 0
        inputBase = 0
        upstreamEnded = false
        phase = .member
        memberIndex = 0
        memberStart = 0
        inflated = 0
        lookStart = 0
        lookEnd = 0
        return true
    }

    private enum PumpResult {
        case bytes(Int)
        case end
        case failed
        case starved
    }

    private enum FillResult {
        case filled, ended, starved, failed
    }

    /// Reads compressed bytes into `input` once it is used up. Reads from the upstream only
    /// when it has bytes available, or to collect its end or error (contract rule 2).
    private func fillInput() -> FillResult {
        inputBase += Int64(inEnd)
        inStart = 0
        inEnd = 0
        if let error = upstream.error {
            fail(wrapUpstream(error, "failed"))
            return .failed
        }
        if upstream.isAtEnd { return .ended }
        guard upstream.hasBytesAvailable else { return .starved }
        let n = upstream.read(input!.assumingMemoryBound(to: UInt8.self), maxLength: inputCapacity)
        if n > 0 {
            inEnd = n
            return .filled
        }
        if n == 0 { return .ended }
        let error =
            upstream.error ?? BlobStreamError(.sourceFailed, "the upstream returned -1 without setting an error")
        fail(wrapUpstream(error, "failed"))
        return .failed
    }

    /// Inflates into `out`, discarding first whatever lies before `target`. Returns as soon
    /// as `out` is full, the upstream has nothing available, or at the end or an error.
    private func pump(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> PumpResult {
        guard let inflater else {
            fail(BlobStreamError(.notOpen, "\(name): not open"))
            return .failed
        }
        if input == nil { input = .allocate(byteCount: inputCapacity, alignment: 16) }
        var n = 0
        /// Reads more compressed bytes once `input` is used up; nil to go on, or what to return.
        func refill() -> PumpResult? {
            switch fillInput() {
            case .filled: return nil
            case .ended:
                upstreamEnded = true
                return nil
            case .starved: return n > 0 ? .bytes(n) : .starved
            case .failed: return .failed
            }
        }
        while true {
            switch phase {
            case .member:
                let destination: UnsafeMutablePointer<UInt8>
                let room: Int
                let discarding = target > inflated
                if discarding {
                    if scratch == nil { scratch = .allocate(capacity: Self.scratchCapacity) }
                    destination = scratch!
                    room = Int(min(Int64(Self.scratchCapacity), target - inflated))
                } else {
                    if n == capacity { return .bytes(n) }
                    destination = out + n
                    room = capacity - n
                }
                // With no input left zlib may still hold output (bits it read ahead): ask first.
                let step = inflater.inflate(input! + inStart, count: inEnd - inStart, into: destination, capacity: room)
                inStart += step.consumed
                inflated += Int64(step.produced)
                if !discarding { n += step.produced }
                switch step.result {
                case .ok:
                    guard step.consumed == 0 && step.produced == 0 else { continue }
                    // No progress: zlib needs more input.
                    if inStart < inEnd {
                        fail(
                            BlobStreamError(
                                .corrupt,
                                "\(name): zlib made no progress at compressed offset \(compressedOffset) in member \(memberIndex + 1)"
                            ))
                        return .failed
                    }
                    if upstreamEnded {
                        let what =
                            memberIndex == 0 && compressedOffset == 0
                            ? "the input is empty (an empty input is not a gzip stream)"
                            : "the input ends inside member \(memberIndex + 1) (which starts at compressed offset \(memberStart))"
                        fail(
                            BlobStreamError(
                                .truncated,
                                "\(name): truncated gzip stream at compressed offset \(compressedOffset): \(what)"))
                        return .failed
                    }
                    if let result = refill() { return result }
                case .memberEnd:
                    phase = .between
                case .failed(let zlibError):
                    fail(
                        BlobStreamError(
                            .corrupt,
                            "\(name): corrupt gzip data at compressed offset \(compressedOffset) in member \(memberIndex + 1) (which starts at compressed offset \(memberStart)): \(zlibError.message)",
                            cause: zlibError))
                    return .failed
                }
            case .between:
                if inStart == inEnd {
                    if upstreamEnded {
                        phase = .finished
                    } else if let result = refill() {
                        return result
                    }
                    continue
                }
                let byte = input!.load(fromByteOffset: inStart, as: UInt8.self)
                if byte == 0 {
                    phase = .padding
                } else if byte != 0x1F {
                    fail(
                        BlobStreamError(
                            .corrupt,
                            "\(name): trailing garbage at compressed offset \(compressedOffset) after gzip member \(memberIndex + 1): byte 0x\(String(byte, radix: 16)) does not start a gzip member"
                        ))
                    return .failed
                } else {
                    inflater.reset()
                    memberIndex += 1
                    memberStart = compressedOffset
                    phase = .member
                }
            case .padding:
                let bytes = UnsafeRawBufferPointer(start: input! + inStart, count: inEnd - inStart)
                if let i = bytes.firstIndex(where: { $0 != 0 }) {
                    inStart += i
                    fail(
                        BlobStreamError(
                            .corrupt,
                            "\(name): trailing garbage at compressed offset \(compressedOffset) after the zero padding that follows the last gzip member"
                        ))
                    return .failed
                }
                inStart = inEnd
                if upstreamEnded {
                    phase = .finished
                } else if let result = refill() {
                    return result
                }
            case .finished:
                if target > inflated {
                    fail(
                        BlobStreamError(
                            .invalidOffset,
                            "\(name): offset \(target) is past the end of the decompressed bytes (\(inflated) bytes)"))
                    return .failed
                }
                return n > 0 ? .bytes(n) : .end
            }
        }
    }

    private func wrapUpstream(_ error: any Error, _ what: String) -> BlobStreamError {
        let code = (error as? BlobStreamError)?.code ?? .sourceFailed
        return BlobStreamError(
            code, "\(name): the upstream \(what) at compressed offset \(compressedOffset): \(error)", cause: error)
    }
}
