import BlobStream
import BlobStreamChecksums
import CBlobStreamZstd
import Foundation

// The zstd layer of a `zstd:` source, with libzstd's streaming decoder: every frame in turn
// (concatenated frames read as one stream, skippable frames skipped), each frame's content
// checksum checked at its end when the frame has one (and a frame without one against the
// file's seek table, when that has checksums: XXH64 of its bytes as they are decoded), the
// window a frame asks for capped before it is decoded. A cut, damaged or foreign input is `.truncated` or `.corrupt` naming
// the source and the compressed offset; never a clean end.

/// Decodes the zstd frames an upstream reader hands it, into the caller's buffers, one call
/// at a time (its owner serializes the calls). Reads the upstream in the blocking style
/// (`waiting: true`): the owner's reads wait for an asynchronous upstream's bytes.
package final class ZstdReader {
    /// What a decode gave.
    package enum Step {
        /// Bytes written to the buffer (more than 0).
        case bytes(Int)
        /// The clean end: the last frame ended whole (and its checksum, if any, matched).
        case end
        /// The sticky failure (`failure`).
        case failed(BlobStreamError)
    }

    package let upstream: BlobUpstreamReader
    /// How errors name the source.
    package let name: String
    /// The largest window (log2 bytes) a frame may ask for.
    package let windowLog: Int

    private var context: OpaquePointer?
    /// The upstream offset of the next compressed byte handed to libzstd.
    package private(set) var compressedOffset: Int64 = 0
    /// The decompressed bytes produced since the start.
    package private(set) var produced: Int64 = 0
    /// The decompressed offset at the end of the last frame that ended whole: every byte
    /// before it passed its frame's checks (its content checksum, when the frame has one).
    package private(set) var checkedUpTo: Int64 = 0
    /// Frames that ended whole, skippable ones included.
    package private(set) var framesEnded = 0
    /// Frames that ended whole since the last start (`restart`, `restart(atFrame:of:)`).
    package private(set) var framesDecoded = 0
    /// Between two frames (or before the first): the next byte starts a frame.
    package var isBetweenFrames: Bool { !inFrame }
    /// Frames with data and no content checksum met so far: their bytes are unprotected.
    package private(set) var framesWithoutChecksum = 0
    /// The sticky failure.
    package private(set) var failure: BlobStreamError?
    /// Whether each frame that ends whole is added to `endedFrames` (an index's pass).
    package var recordsFrames = false
    /// With `recordsFrames`: every frame that ended whole, skippable ones included (they decode
    /// to 0 bytes), in file order, with its content checksum when it has one, and its
    /// `placedChecksum` (its bytes hashed as they are decoded, for a frame index).
    package private(set) var endedFrames: [ZstdSeekTable.Frame] = []
    /// Whether the clean end was reached.
    package private(set) var isFinished = false

    /// Inside a frame (its header seen, its end not yet).
    private var inFrame = false
    /// The compressed offset of the frame being decoded.
    private var frameStart: Int64 = 0
    /// The decompressed offset of the frame being decoded.
    private var frameProducedStart: Int64 = 0
    /// Whether the frame being decoded ends with a content checksum.
    private var frameHasChecksum = false
    /// The last 4 compressed bytes handed to libzstd, little-endian: at a frame's end, its
    /// content checksum when it has one.
    private var tail: UInt32 = 0

    /// The seek table followed since `restart(atFrame:of:)`, or since the first frame without
    /// a checksum of its own when the file's seek table has checksums: each frame from there
    /// is checked against its entry; nil otherwise.
    private var table: ZstdSeekTable?
    /// How errors name `table`: "the seek table", or a frame index and its path.
    private var tableName = "the seek table"
    /// The entry of the frame being decoded (or the next one).
    private var tableIndex = 0
    /// What looking for the upstream's seek table gave (`readSeekTable`), once it looked.
    private var seekTableOutcome: Result<ZstdSeekTable?, BlobStreamError>?
    /// The XXH64 (seed 0) of the frame being decoded, when its entry's checksum must be
    /// checked and the frame has none of its own.
    private var contentHasher: XXH64?
    /// The XXH64 of the frame being decoded seeded with its decompressed offset, when its
    /// entry has a `placedChecksum` or the frame is recorded with one.
    private var placeHasher: XXH64?

    package init(upstream: BlobUpstreamReader, name: String, windowLog: Int = ZstdWindow.defaultLog) {
        precondition(
            (10...ZstdWindow.maximumLog).contains(windowLog), "windowLog must be in 10...\(ZstdWindow.maximumLog)")
        self.upstream = upstream
        self.name = name
        self.windowLog = windowLog
    }

    deinit { end() }

    /// Frees libzstd's state (a later decode makes it again).
    package func end() {
        if let context { ZSTD_freeDCtx(context) }
        context = nil
    }

    /// Records `error` as the sticky failure (the first one stays).
    @discardableResult
    package func record(_ error: BlobStreamError) -> BlobStreamError {
        if failure == nil { failure = error }
        return failure!
    }

    /// Decodes up to `capacity` bytes into `buffer`.
    package func decode(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Step {
        if let failure { return .failed(failure) }
        if isFinished { return .end }
        do {
            let context = try makeContext()
            while true {
                if !inFrame {
                    guard try enterFrame() else {
                        isFinished = true
                        return .end
                    }
                }
                let n = try feed(context, into: buffer, capacity: capacity)
                if n > 0 { return .bytes(n) }
            }
        } catch {
            return .failed(record(error))
        }
    }

    /// Starts again from the first compressed byte: moves the upstream to offset 0 (throws
    /// what its move throws: a pipe cannot go back) and forgets the frames decoded.
    package func restart() throws(BlobStreamError) {
        if let failure { throw failure }
        try upstream.seek(to: 0)
        if let context { ZSTD_DCtx_reset(context, ZSTD_reset_session_only) }
        compressedOffset = 0
        produced = 0
        checkedUpTo = 0
        framesEnded = 0
        framesDecoded = 0
        framesWithoutChecksum = 0
        inFrame = false
        frameStart = 0
        isFinished = false
        table = nil
        tableName = "the seek table"
    }

    /// Starts again at frame `index` of `table` (the file's own seek table, or a frame
    /// index's frames, `tableName` saying which in errors): moves the upstream to the frame's
    /// start and counts on from its decompressed offset. From there each frame is checked
    /// against its entry: a frame starts where it says (and its header's content size, when
    /// it has one, is the entry's), and it ends after exactly its compressed and decompressed
    /// sizes, with the entry's checksum (the frame's own, or XXH64 of its bytes when it has
    /// none) and placed checksum. A mismatch is `.corrupt`.
    package func restart(
        atFrame index: Int, of table: ZstdSeekTable, tableName: String = "the seek table"
    ) throws(BlobStreamError) {
        if let failure { throw failure }
        let frame = table.frames[index]
        try upstream.seek(to: frame.compressedOffset)
        if let context { ZSTD_DCtx_reset(context, ZSTD_reset_session_only) }
        compressedOffset = frame.compressedOffset
        produced = frame.decompressedOffset
        checkedUpTo = produced
        framesEnded = index
        framesDecoded = 0
        inFrame = false
        frameStart = frame.compressedOffset
        isFinished = false
        self.table = table
        self.tableName = tableName
        tableIndex = index
    }

    /// How many of an object's last bytes a reader that will look for its seek table asks for
    /// beside its first request (`BlobRangeReading.expectEnd`): the footer and a table of
    /// about 5,000 frames with checksums (a 20 GiB file in 4 MiB frames).
    package static let seekTableTail = 64 << 10

    /// Reads the upstream's seek table, when it ends with one (zstd's seekable format), and
    /// checks that it adds up (`ZstdSeekTable`). Moves the upstream: the caller moves it
    /// back (or restarts) before the next decode. Nil when the upstream cannot move in
    /// constant time, has no length, or its last bytes are not a seek table's footer.
    /// The table is read once: later calls give what the first found, and do not move.
    package func readSeekTable() throws(BlobStreamError) -> ZstdSeekTable? {
        if let seekTableOutcome { return try seekTableOutcome.get() }
        let outcome = Result { () throws(BlobStreamError) in try lookForSeekTable() }
        seekTableOutcome = outcome
        return try outcome.get()
    }

    private func lookForSeekTable() throws(BlobStreamError) -> ZstdSeekTable? {
        guard upstream.offsetCapability == .seek, let length = upstream.length,
            length >= Int64(ZstdSeekTable.footerSize)
        else { return nil }
        let footer = try readUpstream(at: length - Int64(ZstdSeekTable.footerSize), count: ZstdSeekTable.footerSize)
        let size = try footer.withUnsafeBytes { bytes in
            Result { () throws(BlobStreamError) in
                try ZstdSeekTable.tableFrameSize(footer: bytes, fileLength: length, name: name)
            }
        }.get()
        guard let size else { return nil }
        let frame = try readUpstream(at: length - Int64(size), count: size)
        return try frame.withUnsafeBytes { bytes in
            Result { () throws(BlobStreamError) in try ZstdSeekTable(tableFrame: bytes, fileLength: length, name: name)
            }
        }.get()
    }

    /// Moves the upstream back to the next compressed byte the decoder takes (after
    /// `readSeekTable`).
    package func returnToDecodingPosition() throws(BlobStreamError) {
        try upstream.seek(to: compressedOffset)
    }

    /// `count` upstream bytes from `offset`: by range from a source that reads by range (an
    /// object's end may already be in hand: `ZstdReader.seekTableTail`), else by moving the
    /// upstream there.
    private func readUpstream(at offset: Int64, count: Int) throws(BlobStreamError) -> [UInt8] {
        if let ranged = upstream.source as? any BlobRangeReading {
            let bytes = try ranged.bytes(at: [offset..<(offset + Int64(count))])
            guard let first = bytes.first, first.count == count else {
                throw BlobStreamError(
                    .truncated, "\(name): the input ends before the \(count) bytes from \(offset) its length promised")
            }
            return [UInt8](first)
        }
        try upstream.seek(to: offset)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            switch upstream.fill(atLeast: min(count - bytes.count, upstream.bufferSize), waiting: true) {
            case .bytes(let lent):
                let n = min(lent.count, count - bytes.count)
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: lent[..<n]))
                upstream.consume(n)
            case .end:
                throw BlobStreamError(
                    .truncated,
                    "\(name): the input ends at offset \(offset + Int64(bytes.count)), before the \(count) bytes from \(offset) its length promised"
                )
            case .starved:
                throw BlobStreamError(.sourceFailed, "\(name): the upstream had no bytes at offset \(offset)")
            case .failed(let error): throw upstreamFailure(error)
            }
        }
        return bytes
    }

    // MARK: - Frames

    private func makeContext() throws(BlobStreamError) -> OpaquePointer {
        if let context { return context }
        guard let made = ZSTD_createDCtx() else {
            throw BlobStreamError(.sourceFailed, "\(name): libzstd could not allocate a decoder")
        }
        let set = ZSTD_DCtx_setParameter(made, ZSTD_d_windowLogMax, Int32(windowLog))
        guard ZSTD_isError(set) == 0 else {
            ZSTD_freeDCtx(made)
            throw BlobStreamError(
                .unsupported, "\(name): libzstd refuses a window of 2^\(windowLog) bytes: \(Self.errorName(set))")
        }
        context = made
        return made
    }

    /// At a frame boundary: reads the next frame's header and checks it (the window it asks
    /// for, a frame at all). False at the end of the input after at least one frame.
    private func enterFrame() throws(BlobStreamError) -> Bool {
        let head: UnsafeRawBufferPointer
        switch upstream.fill(atLeast: Int(ZSTD_FRAMEHEADERSIZE_MAX), waiting: true) {
        case .bytes(let bytes): head = bytes
        case .end:
            guard framesEnded > 0 else {
                throw BlobStreamError(.truncated, "\(name): no zstd frame: the input is empty")
            }
            return false
        case .starved:
            throw BlobStreamError(
                .sourceFailed, "\(name): the upstream had no bytes at compressed offset \(compressedOffset)")
        case .failed(let error): throw upstreamFailure(error)
        }
        var header = ZSTD_frameHeader()
        let answer = ZSTD_getFrameHeader(&header, head.baseAddress, head.count)
        if ZSTD_isError(answer) != 0 {
            if let table, tableIndex < table.frames.count {
                throw BlobStreamError(
                    .corrupt,
                    "\(name): \(tableName) places frame \(tableIndex) at compressed offset \(compressedOffset), but no zstd frame starts there (\(Self.errorName(answer)))"
                )
            }
            let what = framesEnded == 0 ? "not zstd data" : "bytes after the last frame that are not a zstd frame"
            throw BlobStreamError(
                .corrupt, "\(name): \(what) at compressed offset \(compressedOffset) (\(Self.errorName(answer)))")
        }
        if answer > 0 {
            throw BlobStreamError(
                .truncated,
                "\(name): the input ends inside a frame header at compressed offset \(compressedOffset) (\(head.count) of \(answer) bytes)"
            )
        }
        if header.frameType != ZSTD_skippableFrame {
            if header.windowSize > UInt64(1) << UInt64(windowLog) {
                let needed = ZstdWindow.log2(roundingUp: header.windowSize)
                throw BlobStreamError(
                    .unsupported,
                    needed > ZstdWindow.maximumLog
                        ? "\(name): the frame at compressed offset \(compressedOffset) declares a window of \(header.windowSize) bytes (2^\(needed)), over the largest libzstd decodes (2^\(ZstdWindow.maximumLog)): it cannot be read"
                        : "\(name): the frame at compressed offset \(compressedOffset) needs a window of \(header.windowSize) bytes (2^\(needed)), over the limit of 2^\(windowLog); allow it with windowLog \(needed) (zstd -d --long=\(needed))"
                )
            }
            if header.checksumFlag == 0 {
                framesWithoutChecksum += 1
                // Unprotected unless the file's seek table has a checksum for it.
                if table == nil { try followSeekTableForChecksums() }
            }
        }
        contentHasher = nil
        placeHasher = nil
        let hasChecksum = header.frameType != ZSTD_skippableFrame && header.checksumFlag != 0
        if let table, tableIndex < table.frames.count {
            let entry = table.frames[tableIndex]
            if entry.compressedOffset != compressedOffset {
                throw BlobStreamError(
                    .corrupt,
                    "\(name): \(tableName) places frame \(tableIndex) at compressed offset \(entry.compressedOffset), but a frame starts at \(compressedOffset)"
                )
            }
            if header.frameType != ZSTD_skippableFrame, header.frameContentSize != UInt64.max,
                header.frameContentSize != UInt64(entry.decompressedSize)
            {
                throw BlobStreamError(
                    .corrupt,
                    "\(name): \(tableName) says frame \(tableIndex) (compressed offset \(compressedOffset)) holds \(entry.decompressedSize) bytes, but its header says \(header.frameContentSize)"
                )
            }
            if entry.checksum != nil && !hasChecksum { contentHasher = XXH64() }
            if entry.placedChecksum != nil { placeHasher = XXH64(seed: UInt64(bitPattern: produced)) }
        }
        if recordsFrames { placeHasher = XXH64(seed: UInt64(bitPattern: produced)) }
        inFrame = true
        frameStart = compressedOffset
        frameProducedStart = produced
        frameHasChecksum = hasChecksum
        return true
    }

    /// At a frame with data and no checksum of its own, decoding with no table: when the
    /// upstream ends with a seek table (zstd's seekable format) whose entries have checksums,
    /// follows it from this frame on, so that every frame is checked against its entry (its
    /// place, sizes, and XXH64 of its bytes). The table is looked for once (a file's last
    /// bytes, or an object's end), only for such frames; one that is damaged is not followed,
    /// as it is not used for offsets. A table that has no entry starting here is `.corrupt`.
    private func followSeekTableForChecksums() throws(BlobStreamError) {
        let found: ZstdSeekTable?
        if let seekTableOutcome {
            found = try? seekTableOutcome.get()
        } else {
            guard upstream.offsetCapability == .seek else { return }
            found = try? readSeekTable()
            try returnToDecodingPosition()
        }
        guard let found, found.hasChecksums else { return }
        guard let index = found.frameIndex(startingAt: compressedOffset) else {
            throw BlobStreamError(
                .corrupt,
                "\(name): the seek table places no frame at compressed offset \(compressedOffset), where a frame starts"
            )
        }
        table = found
        tableName = "the seek table"
        tableIndex = index
    }

    /// Hands the upstream's next bytes to libzstd; the bytes it wrote (0 while it only took input).
    private func feed(
        _ context: OpaquePointer, into buffer: UnsafeMutableRawPointer, capacity: Int
    ) throws(BlobStreamError) -> Int {
        var output = ZSTD_outBuffer(dst: buffer, size: capacity, pos: 0)
        let answer: Int
        switch upstream.fill(waiting: true) {
        case .bytes(let bytes):
            var input = ZSTD_inBuffer(src: bytes.baseAddress, size: bytes.count, pos: 0)
            answer = ZSTD_decompressStream(context, &output, &input)
            keepTail(of: UnsafeRawBufferPointer(rebasing: bytes[..<input.pos]))
            upstream.consume(input.pos)
            compressedOffset += Int64(input.pos)
            try check(answer)
            if input.pos == 0 && output.pos == 0 && answer != 0 {
                throw BlobStreamError(
                    .sourceFailed, "\(name): libzstd took no input at compressed offset \(compressedOffset)")
            }
        case .end:
            // The input ended inside the frame: what libzstd still holds, then a cut frame.
            var input = ZSTD_inBuffer(src: nil, size: 0, pos: 0)
            answer = ZSTD_decompressStream(context, &output, &input)
            try check(answer)
            if output.pos == 0 && answer != 0 {
                throw BlobStreamError(
                    .truncated,
                    "\(name): the input ends at compressed offset \(compressedOffset), inside the frame that starts at \(frameStart)"
                )
            }
        case .starved:
            throw BlobStreamError(
                .sourceFailed, "\(name): the upstream had no bytes at compressed offset \(compressedOffset)")
        case .failed(let error): throw upstreamFailure(error)
        }
        produced += Int64(output.pos)
        if output.pos > 0 && (contentHasher != nil || placeHasher != nil) {
            let written = UnsafeRawBufferPointer(start: buffer, count: output.pos)
            contentHasher?.update(written)
            placeHasher?.update(written)
        }
        if answer == 0 {
            // The frame ended whole: libzstd checked its checksum, and flushed all of it.
            try checkAgainstTable()
            if recordsFrames {
                endedFrames.append(
                    ZstdSeekTable.Frame(
                        compressedOffset: frameStart, compressedSize: compressedOffset - frameStart,
                        decompressedOffset: frameProducedStart, decompressedSize: produced - frameProducedStart,
                        checksum: frameHasChecksum ? tail : nil,
                        placedChecksum: placeHasher.map { Self.low32($0.digest()) }))
            }
            inFrame = false
            framesEnded += 1
            framesDecoded += 1
            checkedUpTo = produced
        }
        return output.pos
    }

    /// Keeps the last 4 of the compressed bytes libzstd took (with those before them).
    private func keepTail(of bytes: UnsafeRawBufferPointer) {
        for byte in bytes.suffix(4) { tail = tail >> 8 | UInt32(byte) << 24 }
    }

    /// At the end of a frame entered through the seek table: the frame is what its entry
    /// says. Past the table's last entry (the table's own frame) nothing is checked.
    private func checkAgainstTable() throws(BlobStreamError) {
        guard let table, tableIndex < table.frames.count else { return }
        let entry = table.frames[tableIndex]
        let compressed = compressedOffset - frameStart
        let decompressed = produced - frameProducedStart
        guard compressed == entry.compressedSize, decompressed == entry.decompressedSize else {
            throw BlobStreamError(
                .corrupt,
                "\(name): \(tableName) says frame \(tableIndex) (compressed offset \(frameStart)) holds \(entry.decompressedSize) bytes in \(entry.compressedSize), but it decoded to \(decompressed) bytes in \(compressed)"
            )
        }
        if let checksum = entry.checksum {
            if frameHasChecksum, checksum != tail {
                throw BlobStreamError(
                    .corrupt,
                    "\(name): \(tableName)'s checksum of frame \(tableIndex) (compressed offset \(frameStart)) is \(Self.hex(checksum)), but the frame's own is \(Self.hex(tail))"
                )
            }
            if let contentHasher, case let computed = Self.low32(contentHasher.digest()), computed != checksum {
                throw BlobStreamError(
                    .corrupt,
                    "\(name): frame \(tableIndex) (compressed offset \(frameStart)) has no checksum of its own and decoded to bytes whose XXH64 is \(Self.hex(computed)), but \(tableName)'s checksum of it is \(Self.hex(checksum)): the frame is damaged"
                )
            }
        }
        if let placed = entry.placedChecksum, let placeHasher,
            case let computed = Self.low32(placeHasher.digest()), computed != placed
        {
            throw BlobStreamError(
                .corrupt,
                "\(name): frame \(tableIndex) (compressed offset \(frameStart)), which \(tableName) places at decompressed offset \(frameProducedStart), decoded to bytes whose XXH64 there is \(Self.hex(computed)), but the index recorded \(Self.hex(placed)): the index places it wrongly (an earlier frame's size in it is changed) or the frame is damaged"
            )
        }
        tableIndex += 1
    }

    /// The low 32 bits of an XXH64: what zstd and the seek table keep.
    package static func low32(_ hash: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: hash) }

    /// `value` as 8 hex digits after 0x.
    package static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }

    private func check(_ answer: Int) throws(BlobStreamError) {
        guard ZSTD_isError(answer) != 0 else { return }
        let what =
            ZSTD_getErrorCode(answer) == ZSTD_error_checksum_wrong
            ? "the frame's content checksum does not match its bytes" : "corrupt zstd data"
        throw BlobStreamError(
            .corrupt,
            "\(name): \(what) in the frame that starts at compressed offset \(frameStart), by compressed offset \(compressedOffset) (\(Self.errorName(answer)))"
        )
    }

    private func upstreamFailure(_ error: any Error) -> BlobStreamError {
        let code = (error as? BlobStreamError)?.code ?? .sourceFailed
        return BlobStreamError(
            code, "\(name): the upstream failed to read at compressed offset \(compressedOffset): \(error)",
            cause: error)
    }

    private static func errorName(_ answer: Int) -> String {
        ZSTD_getErrorName(answer).map { String(cString: $0) } ?? "error \(answer)"
    }
}
