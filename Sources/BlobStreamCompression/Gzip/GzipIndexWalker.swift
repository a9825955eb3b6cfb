import BlobStream

/// Decodes a gzip file with a raw-deflate inflater, parsing headers and trailers itself, so
/// that it can either record seek points while it goes (building an index) or start at a
/// seek point and check every chunk it decodes whole against the index's CRC-32 (reading
/// with an index). Reads the compressed bytes through a `BlobUpstreamReader`, waiting for them.
///
/// Member trailers (CRC-32, ISIZE) are checked for every member decoded from its start.
/// Not thread-safe: one owner.
final class GzipIndexWalker {
    enum Mode {
        /// Record seek points every `spacing` bytes (from the start of the file).
        case build(spacing: Int)
        /// Check chunks against `index`.
        case verify(GzipIndex)
    }

    private enum Phase { case header, deflate, trailer, between, padding, finished }

    let upstream: BlobUpstreamReader
    let name: String
    private let mode: Mode
    private let inflater: RawInflater
    private var phase = Phase.header

    /// The uncompressed offset of the next byte inflated.
    private(set) var produced: Int64 = 0
    /// The next byte handed out; bytes before it are inflated and discarded.
    var target: Int64 = 0
    /// Every byte decoded since the start (or the seek point started at) and before this
    /// offset is covered by a check that passed: a chunk's CRC-32 from the index, or a
    /// member's trailer for a member decoded from its start.
    private(set) var verified: Int64 = 0

    private var memberIndex = 0
    private var memberStart: Int64 = 0
    private var memberCRC: UInt32 = 0
    private var memberBytes: Int64 = 0
    private var memberFromStart = true

    /// Building: the points so far, and the running CRC of the current chunk.
    private(set) var points: [GzipIndex.SeekPoint] = []
    private var chunkCRC: UInt32 = 0
    private var lastWindowedPoint: Int64 = 0
    /// Verifying: the chunk being decoded and whether it was decoded from its start.
    private var chunk = 0
    private var chunkFromStart = false

    private var stalls = 0

    private static let scratchCapacity = 64 * 1024
    private var scratch: UnsafeMutablePointer<UInt8>?

    init(upstream: BlobUpstreamReader, name: String, mode: Mode) throws(BlobStreamError) {
        self.upstream = upstream
        self.name = name
        self.mode = mode
        do {
            inflater = try RawInflater()
        } catch {
            throw BlobStreamError(.sourceFailed, "\(name): cannot initialize zlib", cause: error)
        }
    }

    deinit { scratch?.deallocate() }

    /// Building, at the end: the index.
    func builtIndex() -> GzipIndex? {
        guard case .build(let spacing) = mode, phase == .finished else { return nil }
        return GzipIndex(
            spacing: spacing, compressedSize: upstream.offset, uncompressedSize: produced, points: points,
            identity: nil)
    }

    /// The whole input was decoded to its end.
    var isFinished: Bool { phase == .finished }

    /// A walker that verifies against `index`, started at the seek point at or before
    /// `offset`, with `target` at `offset`.
    static func starting(at offset: Int64, of index: GzipIndex, upstream: BlobUpstreamReader, name: String)
        throws(BlobStreamError) -> GzipIndexWalker
    {
        if let length = upstream.length, length != index.compressedSize {
            throw BlobStreamError(
                .changed, "\(name): the index is for \(index.compressedSize) compressed bytes, the source has \(length)"
            )
        }
        guard let p = index.pointIndex(atOrBefore: min(offset, max(0, index.uncompressedSize - 1))) else {
            throw BlobStreamError(.corrupt, "\(name): the index has no seek point at or before offset \(offset)")
        }
        let walker = try GzipIndexWalker(upstream: upstream, name: name, mode: .verify(index))
        try walker.start(atPoint: p, of: index)
        walker.target = offset
        return walker
    }

    /// Starts at seek point `i` of the index being verified (the upstream moves there).
    func start(atPoint i: Int, of index: GzipIndex) throws(BlobStreamError) {
        let point = index.points[i]
        let from = point.bitOffset > 0 ? point.compressedOffset - 1 : point.compressedOffset
        // The compressed bytes of this chunk and the next (a read from a seek point rarely
        // needs more) are asked for before the window is loaded: over a remote object and
        // a remote index, the two requests are then in flight together.
        let to = i + 2 < index.points.count ? index.points[i + 2].compressedOffset + 1 : index.compressedSize
        upstream.expectRead(from..<max(from, to))
        let window = try point.loadWindow() ?? []
        var byte: UInt8 = 0
        try upstream.seek(to: from)
        if point.bitOffset > 0 { byte = try nextByte() }
        do {
            try inflater.reset()
            try inflater.resume(bits: point.bitOffset, byte: byte, window: window)
        } catch {
            throw corrupt("cannot resume at seek point \(i) (compressed offset \(point.compressedOffset))", error)
        }
        produced = point.uncompressedOffset
        verified = produced
        target = max(target, produced)
        memberFromStart = !point.hasWindow
        memberCRC = 0
        memberBytes = 0
        memberStart = point.compressedOffset
        chunk = i
        chunkCRC = 0
        chunkFromStart = true
        phase = .deflate
    }

    /// Inflates into `out` (discarding what lies before `target`); 0 only at the end.
    func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError) -> Int {
        var n = 0
        while n < capacity || target > produced {
            switch phase {
            case .header:
                try parseHeader()
            case .deflate:
                let discarding = target > produced
                if discarding && scratch == nil { scratch = .allocate(capacity: Self.scratchCapacity) }
                let destination = discarding ? scratch! : out + n
                var room = discarding ? Int(min(Int64(Self.scratchCapacity), target - produced)) : capacity - n
                if case .verify(let index) = mode {
                    room = Int(min(Int64(room), max(1, index.chunkEnd(chunk) - produced)))
                }
                let written = try inflateStep(into: destination, capacity: room)
                if !discarding { n += written }
            case .trailer:
                try checkTrailer()
            case .between:
                guard case .bytes(let bytes) = try fill(1) else {
                    try finish()
                    continue
                }
                if bytes[0] == 0 {
                    phase = .padding
                } else if bytes[0] == 0x1F {
                    memberIndex += 1
                    memberStart = upstream.offset
                    phase = .header
                } else {
                    throw BlobStreamError(
                        .corrupt,
                        "\(name): trailing garbage at compressed offset \(upstream.offset) after gzip member \(memberIndex + 1)"
                    )
                }
            case .padding:
                guard case .bytes(let bytes) = try fill(1) else {
                    try finish()
                    continue
                }
                try upstream.consumePadding(bytes, name: name)
            case .finished:
                if target > produced {
                    throw BlobStreamError(
                        .invalidOffset,
                        "\(name): offset \(target) is past the end of the decompressed bytes (\(produced) bytes)")
                }
                return n
            }
        }
        return n
    }

    /// Verifying, with `produced` at the end of a member that the index says ends here:
    /// reads the rest of its deflate data (which must produce nothing more) and its trailer,
    /// checking it when the member was decoded from its start.
    func readMemberEnd() throws(BlobStreamError) {
        if scratch == nil { scratch = .allocate(capacity: Self.scratchCapacity) }
        while phase == .deflate {
            if try inflateStep(into: scratch!, capacity: 1) > 0 {
                throw BlobStreamError(
                    .changed,
                    "\(name): member \(memberIndex + 1) goes on past uncompressed offset \(produced - 1), where its index says it ends"
                )
            }
        }
        if phase == .trailer { try checkTrailer() }
    }

    // MARK: - Steps

    private func inflateStep(into destination: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError)
        -> Int
    {
        let building: Bool
        if case .build = mode { building = true } else { building = false }
        let input: UnsafeRawBufferPointer
        switch try fill(1) {
        case .bytes(let bytes): input = bytes
        case .end: input = UnsafeRawBufferPointer(start: nil, count: 0)
        }
        let step = inflater.inflate(input, into: destination, capacity: capacity, stopAtBlock: building)
        upstream.consume(step.consumed)
        if step.produced > 0 {
            let crc = ZlibCRC32.update(0, UnsafeRawBufferPointer(start: destination, count: step.produced))
            memberCRC = ZlibCRC32.combine(memberCRC, crc, step.produced)
            chunkCRC = ZlibCRC32.combine(chunkCRC, crc, step.produced)
            memberBytes += Int64(step.produced)
            produced += Int64(step.produced)
        }
        if let error = step.error {
            throw corrupt("corrupt deflate data at compressed offset \(upstream.offset)", error)
        }
        if step.consumed > 0 || step.produced > 0 { stalls = 0 }
        if step.streamEnd {
            phase = .trailer
        } else if step.consumed == 0 && step.produced == 0 && !input.isEmpty {
            // zlib may finish a block from bits it holds (an empty block); twice is a stall.
            stalls += 1
            if stalls > 1 {
                throw BlobStreamError(
                    .corrupt, "\(name): zlib made no progress at compressed offset \(upstream.offset)")
            }
        } else if input.isEmpty && step.produced == 0 {
            throw truncated()
        }
        if case .build(let spacing) = mode, inflater.atBlockBoundary, produced - lastWindowedPoint >= Int64(spacing) {
            addPoint(window: inflater.window(), bits: inflater.unusedBits)
            lastWindowedPoint = produced
        }
        if case .verify = mode { try checkChunks() }
        return step.produced
    }

    private func addPoint(window: [UInt8]?, bits: Int) {
        if !points.isEmpty { points[points.count - 1].chunkCRC32 = chunkCRC }
        chunkCRC = 0
        points.append(
            GzipIndex.SeekPoint(
                uncompressedOffset: produced, compressedOffset: upstream.offset, bitOffset: bits, window: window,
                chunkCRC32: nil))
    }

    /// Verifying: checks every chunk that ends here and was decoded whole.
    private func checkChunks() throws(BlobStreamError) {
        guard case .verify(let index) = mode else { return }
        while chunk < index.points.count && produced == index.chunkEnd(chunk)
            && (produced < index.uncompressedSize || phase == .finished)
        {
            if chunkFromStart, let expected = index.points[chunk].chunkCRC32 {
                if expected != chunkCRC {
                    throw BlobStreamError(
                        .changed,
                        "\(name): the uncompressed bytes \(index.points[chunk].uncompressedOffset)..<\(produced) (chunk \(chunk + 1) of the index) do not match the index's CRC-32 (the file changed since it was indexed, or is corrupt)"
                    )
                }
                if verified >= index.points[chunk].uncompressedOffset { verified = produced }
            }
            chunk += 1
            chunkCRC = 0
            chunkFromStart = true
        }
    }

    private func parseHeader() throws(BlobStreamError) {
        var header = GzipHeaderParser()
        parsing: while true {
            guard case .bytes(let bytes) = try fill(1) else { throw truncated() }
            var consumed = 0
            let outcome = header.parse(bytes, consumed: &consumed)
            upstream.consume(consumed)
            switch outcome {
            case .done: break parsing
            case .needMore: continue
            case .invalid(_, let message):
                throw BlobStreamError(
                    .corrupt,
                    "\(name): \(message) in the gzip header of member \(memberIndex + 1) at compressed offset \(memberStart)",
                    cause: ZlibError(code: -3, message: message)) // Z_DATA_ERROR, as zlib answers
            }
        }
        do { try inflater.reset() } catch { throw corrupt("cannot reset zlib", error) }
        memberCRC = 0
        memberBytes = 0
        memberFromStart = true
        if case .build = mode { addPoint(window: nil, bits: 0) }
        phase = .deflate
    }

    private func checkTrailer() throws(BlobStreamError) {
        var trailer: [UInt8] = []
        for _ in 0..<8 { trailer.append(try nextByte()) }
        if memberFromStart, let failed = GzipTrailer(trailer, at: 0).mismatch(crc32: memberCRC, length: memberBytes) {
            throw BlobStreamError(
                .corrupt,
                "\(name): member \(memberIndex + 1) (which starts at compressed offset \(memberStart)) fails its \(failed) check"
            )
        }
        if memberFromStart && produced - memberBytes <= verified { verified = produced }
        phase = .between
    }

    private func finish() throws(BlobStreamError) {
        phase = .finished
        if case .verify(let index) = mode {
            if produced != index.uncompressedSize || upstream.offset != index.compressedSize {
                throw BlobStreamError(
                    .changed,
                    "\(name): the file ends at uncompressed offset \(produced) (compressed \(upstream.offset)) but its index says \(index.uncompressedSize) (compressed \(index.compressedSize))"
                )
            }
            try checkChunks()
        } else if !points.isEmpty {
            points[points.count - 1].chunkCRC32 = chunkCRC
        }
    }

    // MARK: - Input

    private func fill(_ count: Int) throws(BlobStreamError) -> WaitedBytes {
        try upstream.fillWaiting(atLeast: count, name: name)
    }

    private func nextByte() throws(BlobStreamError) -> UInt8 {
        guard case .bytes(let bytes) = try fill(1) else { throw truncated() }
        upstream.consume(1)
        return bytes[0]
    }

    private func truncated() -> BlobStreamError {
        GzipErrors(name: name).truncated(at: upstream.offset, member: memberIndex, memberStart: memberStart)
    }

    private func corrupt(_ what: String, _ cause: ZlibError) -> BlobStreamError {
        BlobStreamError(.corrupt, "\(name): \(what) in member \(memberIndex + 1): \(cause.message)", cause: cause)
    }
}
