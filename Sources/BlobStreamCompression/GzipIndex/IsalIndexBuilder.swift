import BlobStream
import CBlobStreamIsal

/// Builds a seek-point index with ISA-L's raw inflate (about 2.5× zlib's speed), checking what
/// `GzipIndexWalker` checks when it builds (headers, every member's CRC-32 and ISIZE, what
/// follows the last member) with the same words.
///
/// ISA-L has no `Z_BLOCK`: it decodes with large inputs up to `spacing` bytes past the last
/// windowed point, then with small inputs (`huntInput` bytes) until a call stops inside the
/// header of the next deflate block, where nothing is pending (`bs_isal_inflate_block_step`):
/// a seek point at the bit where that block starts. Inside a stored block the input given
/// ends exactly at the block's end, so the next call stops in the header after it. The point therefore lands at a block
/// boundary at least `spacing` bytes after the last one (not always the first such boundary,
/// as zlib's walker finds it: a short block header that fits in the input is passed over).
///
/// Every call of ISA-L moves its 32 KiB of history, so a hunt made only of small calls costs
/// hundreds of moves per point (about a quarter of the build). A hunt therefore looks ahead
/// first (`lookAheadSteps`): a call with a larger input, after which the inflater tells whether
/// a new block began within it (`bs_isal_inflater_crossed_block`). If none did, the call stands;
/// if one did, the call is taken back (`bs_isal_inflater_restore`) and its input looked through
/// with the next, smaller size, down to `huntInput`.
///
/// Not thread-safe: one owner.
final class IsalIndexBuilder {
    /// Bytes of input per call while looking for a block boundary: a dynamic block's header is
    /// usually longer, so the call stops inside it.
    static let huntInput = 32
    /// Input per look-ahead call while hunting, coarse to fine, before calls of `huntInput`.
    static let lookAheadSteps = [4096, 512]
    /// The most input one hunt takes: a boundary not found by then (fixed-Huffman blocks,
    /// whose 3-bit header always fits) is given up, and the next hunt starts `spacing` later,
    /// so that building never costs much more than inflating.
    static let huntBudget = 128 * 1024
    /// Output room per call and the bytes of history kept before it (the window).
    private static let outputCapacity = 1 << 20
    private static let history = GzipIndex.windowSize
    /// The least room a call gets (enough for what 64 bytes of input plus ISA-L's 8 held bytes decode to).
    private static let leastRoom = 256 * 1024

    private let upstream: BlobUpstreamReader
    private let name: String
    private let spacing: Int
    private let onOutput: ((UnsafeRawBufferPointer) throws(BlobStreamError) -> Void)?
    private let inflater: OpaquePointer

    private var memberIndex = 0
    private var memberStart: Int64 = 0
    /// The CRC-32 of the member's bytes before the current chunk (chunks never span members).
    private var memberCRC: UInt32 = 0
    private var memberBytes: Int64 = 0
    private var produced: Int64 = 0
    private var chunkCRC: UInt32 = 0
    private var chunkBytes: Int64 = 0
    private var lastWindowedPoint: Int64 = 0
    private var points: [GzipIndex.SeekPoint] = []

    /// `history` bytes before `base + history + filled` are the last bytes inflated.
    private let base: UnsafeMutablePointer<UInt8>
    private var filled = 0

    /// Whether ISA-L can build indexes here (raw inflate and its CRC-32 loaded).
    static var isAvailable: Bool { bs_isal_raw_available() != 0 }

    init(
        upstream: BlobUpstreamReader, name: String, spacing: Int,
        onOutput: ((UnsafeRawBufferPointer) throws(BlobStreamError) -> Void)?
    ) throws(BlobStreamError) {
        guard Self.isAvailable, let inflater = bs_isal_raw_inflater_create() else {
            throw BlobStreamError(.unsupported, "\(name): ISA-L's raw inflate is unavailable")
        }
        self.upstream = upstream
        self.name = name
        self.spacing = spacing
        self.onOutput = onOutput
        self.inflater = inflater
        base = .allocate(capacity: Self.history + Self.outputCapacity)
        base.initialize(repeating: 0, count: Self.history)
    }

    deinit {
        bs_isal_inflater_destroy(inflater)
        base.deallocate()
    }

    /// Reads the whole gzip stream and returns its index (no identity).
    func build() throws(BlobStreamError) -> GzipIndex {
        var header = GzipHeaderParser()
        while true {
            // A member: its header, its deflate data, its trailer.
            memberStart = upstream.offset
            try parse(&header)
            bs_isal_inflater_reset(inflater)
            memberBytes = 0
            addPoint(window: nil, compressedOffset: upstream.offset, bits: 0)
            let pastEnd = try inflateMember()
            try checkTrailer(pastEnd)
            guard try nextMember() else { break }
            memberIndex += 1
        }
        if !points.isEmpty { points[points.count - 1].chunkCRC32 = chunkCRC }
        return GzipIndex(
            spacing: spacing, compressedSize: upstream.offset, uncompressedSize: produced, points: points,
            identity: nil)
    }

    // MARK: - Steps

    private func parse(_ header: inout GzipHeaderParser) throws(BlobStreamError) {
        header.reset()
        while true {
            guard case .bytes(let bytes) = try fill() else { throw truncated() }
            var consumed = 0
            let outcome = header.parse(bytes, consumed: &consumed)
            upstream.consume(consumed)
            switch outcome {
            case .done: return
            case .needMore: continue
            case .invalid(let code, let message):
                throw BlobStreamError(
                    .corrupt,
                    "\(name): \(message) in the gzip header of member \(memberIndex + 1) at compressed offset \(memberStart)",
                    cause: IsalError(code: code, message: message))
            }
        }
    }

    /// Inflates the member's deflate data; returns the bytes ISA-L took past its end.
    private func inflateMember() throws(BlobStreamError) -> [UInt8] {
        var stalls = 0
        var storedLeft = 0
        var hunted = 0
        // The hunt's place in `lookAheadSteps` (its count: calls of `huntInput`), and where the
        // input in which a look-ahead found a block start ends (compressed offset).
        var huntLevel = 0
        var windowEnd: Int64 = 0
        while true {
            let input: UnsafeRawBufferPointer
            switch try fill() {
            case .bytes(let bytes): input = bytes
            case .end: input = UnsafeRawBufferPointer(start: nil, count: 0)
            }
            if Self.outputCapacity - filled < Self.leastRoom { slideHistory() }
            let distance = Int64(spacing) - (produced - lastWindowedPoint)
            let hunting = distance <= 0
            if huntLevel > 0 && upstream.offset >= windowEnd { huntLevel = 0 }
            var huntCount = Self.huntInput
            var lookingAhead = false
            if storedLeft > 0 {
                huntCount = storedLeft
            } else if hunting && huntLevel < Self.lookAheadSteps.count {
                lookingAhead = bs_isal_inflater_save(inflater) != 0
                if lookingAhead { huntCount = Self.lookAheadSteps[huntLevel] }
            }
            if huntLevel > 0 { huntCount = min(huntCount, Int(windowEnd - upstream.offset)) }
            let inCount = min(input.count, hunting ? huntCount : Self.outputCapacity)
            let room = hunting ? Self.outputCapacity - filled : Int(min(Int64(Self.outputCapacity - filled), distance))
            let out = base + Self.history + filled
            let step = bs_isal_inflate_block_step(
                inflater, input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt32(inCount), out,
                UInt32(room))
            if lookingAhead && step.status == 0 && step.at_block_boundary == 0
                && bs_isal_inflater_crossed_block(inflater) != 0
            {
                // A block starts within these bytes: look through them again, closer.
                bs_isal_inflater_restore(inflater)
                windowEnd = upstream.offset + Int64(inCount)
                huntLevel += 1
                continue
            }
            upstream.consume(Int(step.consumed))
            storedLeft = Int(step.stored_left)
            if step.produced > 0 { try took(out, Int(step.produced)) }
            if step.status < 0 {
                throw BlobStreamError(
                    .corrupt,
                    "\(name): corrupt deflate data at compressed offset \(upstream.offset) in member \(memberIndex + 1): ISA-L error \(step.status)",
                    cause: IsalError(code: step.status, message: "ISA-L error \(step.status)"))
            }
            if step.status == 1 {
                return withUnsafeBytes(of: step.past_end) { Array($0.prefix(Int(step.past_end_count))) }
            }
            if hunting && step.at_block_boundary != 0 && memberBytes > 0 {
                let held = Int64(step.held_bits)
                addPoint(window: window(), compressedOffset: upstream.offset - held / 8, bits: Int(held % 8))
                lastWindowedPoint = produced
                hunted = 0
                huntLevel = 0
            } else if hunting {
                hunted += Int(step.consumed)
                if hunted > Self.huntBudget {
                    lastWindowedPoint = produced
                    hunted = 0
                    huntLevel = 0
                }
            }
            if step.consumed > 0 || step.produced > 0 {
                stalls = 0
            } else if input.isEmpty {
                throw truncated()
            } else {
                stalls += 1
                if stalls > 1 {
                    throw BlobStreamError(
                        .corrupt, "\(name): ISA-L made no progress at compressed offset \(upstream.offset)")
                }
            }
        }
    }

    /// `count` new bytes at `out`: the CRC-32s, the caller, the history.
    private func took(_ out: UnsafeMutablePointer<UInt8>, _ count: Int) throws(BlobStreamError) {
        chunkCRC = bs_isal_crc32(chunkCRC, out, UInt64(count))
        chunkBytes += Int64(count)
        memberBytes += Int64(count)
        produced += Int64(count)
        filled += count
        try onOutput?(UnsafeRawBufferPointer(start: out, count: count))
    }

    /// Moves the last `history` bytes to the front of the buffer.
    private func slideHistory() {
        (base).update(from: base + filled, count: Self.history)
        filled = 0
    }

    /// The 32 KiB before the current position (this member's bytes, zeros before its start).
    private func window() -> [UInt8] {
        let have = Int(min(memberBytes, Int64(Self.history)))
        var window = [UInt8](repeating: 0, count: Self.history - have)
        window.append(contentsOf: UnsafeBufferPointer(start: base + Self.history + filled - have, count: have))
        return window
    }

    private func addPoint(window: [UInt8]?, compressedOffset: Int64, bits: Int) {
        if !points.isEmpty { points[points.count - 1].chunkCRC32 = chunkCRC }
        memberCRC = window == nil ? 0 : ZlibCRC32.combine(memberCRC, chunkCRC, Int(chunkBytes))
        chunkCRC = 0
        chunkBytes = 0
        points.append(
            GzipIndex.SeekPoint(
                uncompressedOffset: produced, compressedOffset: compressedOffset, bitOffset: bits, window: window,
                chunkCRC32: nil))
    }

    private func checkTrailer(_ pastEnd: [UInt8]) throws(BlobStreamError) {
        var trailer = Array(pastEnd.prefix(8))
        while trailer.count < 8 {
            guard case .bytes(let bytes) = try fill() else { throw truncated() }
            let n = min(bytes.count, 8 - trailer.count)
            trailer += bytes.prefix(n)
            upstream.consume(n)
        }
        guard pastEnd.count <= 8 else { throw truncated() }
        let memberCRC = ZlibCRC32.combine(memberCRC, chunkCRC, Int(chunkBytes))
        if let failed = GzipTrailer(trailer, at: 0).mismatch(crc32: memberCRC, length: memberBytes) {
            throw BlobStreamError(
                .corrupt,
                "\(name): member \(memberIndex + 1) (which starts at compressed offset \(memberStart)) fails its \(failed) check"
            )
        }
    }

    /// After a trailer: true at the next member's header; false at the end (zero padding is
    /// allowed after the last member, nothing else).
    private func nextMember() throws(BlobStreamError) -> Bool {
        guard case .bytes(let bytes) = try fill() else { return false }
        if bytes[0] == 0x1F { return true }
        guard bytes[0] == 0 else {
            throw BlobStreamError(
                .corrupt,
                "\(name): trailing garbage at compressed offset \(upstream.offset) after gzip member \(memberIndex + 1)"
            )
        }
        while case .bytes(let bytes) = try fill() { try upstream.consumePadding(bytes, name: name) }
        return false
    }

    // MARK: - Input

    private func fill() throws(BlobStreamError) -> WaitedBytes {
        try upstream.fillWaiting(name: name)
    }

    private func truncated() -> BlobStreamError {
        GzipErrors(name: name).truncated(at: upstream.offset, member: memberIndex, memberStart: memberStart)
    }
}
