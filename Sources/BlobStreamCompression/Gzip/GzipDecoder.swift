import BlobStream

/// The gzip state machine of `GzipDataSource`: inflates the compressed bytes that a
/// `BlobUpstreamReader` lends, member after member, through trailing zero padding to the end, and
/// discards what lies before `target`.
///
/// By default it never waits: when the upstream has nothing now it answers `.starved` (the
/// event-driven owner, `GzipDataSource`, then waits for the upstream's announcement). An
/// owner whose reads block (`waits`: a tar.gz member read through its index on the archive
/// source's thread) has it wait for the announcement instead, as its other strategies do, so
/// that "nothing yet" is never taken for a failure. Not thread-safe: its owner calls it with
/// its lock held.
final class GzipDecoder {
    /// What `pump(into:capacity:)` did.
    enum Output {
        /// This many bytes were written (> 0).
        case bytes(Int)
        /// The end of the last member (and of any padding); `target` was reached.
        case end
        /// `failure` is set.
        case failed
        /// The upstream has nothing available now.
        case starved
    }

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

    /// The compressed bytes.
    let upstream: BlobUpstreamReader
    /// How errors name the source.
    let errors: GzipErrors
    /// A refill with nothing written yet waits for an asynchronous upstream's announcement
    /// (`BlobUpstreamReader.fill(atLeast:waiting:)`): `pump` then never answers `.starved`.
    let waits: Bool
    /// The first error; sticky.
    private(set) var failure: BlobStreamError?

    /// Which inflater `start()` makes, and whether ISA-L can be had.
    let engine: InflateEngine
    private let isal: IsalAvailability
    private var inflater: (any GzipMemberInflating)?
    private var phase = Phase.member
    private var memberIndex = 0
    private var memberStart: Int64 = 0

    /// Decompressed bytes produced by zlib so far (delivered, looked ahead or discarded).
    private(set) var inflated: Int64 = 0
    /// Every decompressed byte before this offset is covered by a member trailer (CRC-32
    /// and ISIZE) that passed.
    private(set) var verified: Int64 = 0
    /// The decompressed offset of the next byte to write out; bytes before it are
    /// discarded. The owner moves it forward as it hands bytes out.
    var target: Int64 = 0

    private static let scratchCapacity = 64 * 1024
    private var scratch: UnsafeMutablePointer<UInt8>?
    /// What zlib is handed when no compressed byte is buffered (it may still hold output).
    private let noInput = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    init(
        upstream: BlobUpstreamReader, errors: GzipErrors, engine: InflateEngine = .automatic, isal: IsalAvailability,
        waits: Bool = false
    ) {
        self.upstream = upstream
        self.errors = errors
        self.waits = waits
        self.engine = engine
        self.isal = isal
    }

    deinit {
        end()
        noInput.deallocate()
    }

    /// The last member ended at the upstream's end.
    var isFinished: Bool { phase == .finished }

    /// The compressed offset of the next byte zlib gets.
    var compressedOffset: Int64 { upstream.offset }

    /// Starts the inflater of `engine`; false after recording `failure`.
    func start() -> Bool {
        do {
            inflater = try engine.makeInflater(isal: isal, name: errors.name)
            return true
        } catch {
            record(error)
            return false
        }
    }

    /// Frees the inflater's state and the scratch buffer.
    func end() {
        inflater?.end()
        inflater = nil
        scratch?.deallocate()
        scratch = nil
    }

    /// Records the first error (later ones are ignored).
    func record(_ error: BlobStreamError) {
        if failure == nil { failure = error }
    }

    /// Moves the upstream back to its first byte and starts inflating again; false when
    /// the upstream cannot move at all or refuses offset 0.
    func restart() -> Bool {
        guard upstream.offsetCapability != .none, (try? upstream.seek(to: 0)) != nil else { return false }
        inflater?.reset()
        phase = .member
        memberIndex = 0
        memberStart = 0
        inflated = 0
        verified = 0
        return true
    }

    /// Inflates into `out`, discarding first whatever lies before `target`. Returns as soon
    /// as `out` is full, the upstream has nothing available (with `waits`: nothing available
    /// after some bytes were written; with none written it waits), or at the end or an error.
    func pump(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> Output {
        if failure != nil { return .failed }
        guard let inflater else { return fail(errors.notOpen()) }
        var n = 0
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
                let input = buffered()
                let step = inflater.inflate(
                    input.baseAddress ?? UnsafeRawPointer(noInput), count: input.count, into: destination,
                    capacity: room)
                upstream.consume(step.consumed)
                inflated += Int64(step.produced)
                if !discarding { n += step.produced }
                switch step.result {
                case .ok:
                    guard step.consumed == 0 && step.produced == 0 else { continue }
                    // No progress: zlib needs more input.
                    if upstream.bufferedCount > 0 {
                        return fail(errors.noProgress(at: compressedOffset, member: memberIndex))
                    }
                    if upstream.reachedEnd {
                        return fail(
                            errors.truncated(at: compressedOffset, member: memberIndex, memberStart: memberStart))
                    }
                    if let stop = refill(n) { return stop }
                case .memberEnd:
                    // The inflater checked the member's CRC-32 and ISIZE.
                    verified = inflated
                    phase = .between
                case .failed(let failure):
                    return fail(
                        errors.corrupt(at: compressedOffset, member: memberIndex, memberStart: memberStart, failure))
                }
            case .between:
                let input = buffered()
                guard let byte = input.first else {
                    if upstream.reachedEnd {
                        phase = .finished
                    } else if let stop = refill(n) {
                        return stop
                    }
                    continue
                }
                if byte == 0 {
                    phase = .padding
                } else if byte != 0x1F {
                    return fail(errors.trailingGarbage(at: compressedOffset, afterMember: memberIndex, byte: byte))
                } else {
                    inflater.reset()
                    memberIndex += 1
                    memberStart = compressedOffset
                    phase = .member
                }
            case .padding:
                let input = buffered()
                if let i = input.firstIndex(where: { $0 != 0 }) {
                    upstream.consume(i)
                    return fail(errors.garbageAfterPadding(at: compressedOffset))
                }
                upstream.consume(input.count)
                if upstream.reachedEnd {
                    phase = .finished
                } else if let stop = refill(n) {
                    return stop
                }
            case .finished:
                if target > inflated { return fail(errors.pastTheEnd(target, inflated: inflated)) }
                return n > 0 ? .bytes(n) : .end
            }
        }
    }

    /// The compressed bytes buffered now, without reading (empty when none).
    private func buffered() -> UnsafeRawBufferPointer {
        guard upstream.bufferedCount > 0, case .bytes(let bytes) = upstream.fill() else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        return bytes
    }

    /// Reads more compressed bytes (nothing is buffered); nil to go on (bytes, or the end:
    /// `upstream.reachedEnd` tells), or what `pump` answers. With `waits` and nothing
    /// `written`, waits for an asynchronous upstream that has announced nothing yet (the
    /// reader reads it only once it announced bytes, its end or its error: contract rule 2);
    /// with bytes written, hands those out rather than wait.
    private func refill(_ written: Int) -> Output? {
        switch upstream.fill(waiting: waits && written == 0) {
        case .bytes, .end: return nil
        case .starved: return written > 0 ? .bytes(written) : .starved
        case .failed(let error): return fail(errors.upstream(error, "failed", at: compressedOffset))
        }
    }

    private func fail(_ error: BlobStreamError) -> Output {
        record(error)
        return .failed
    }
}
