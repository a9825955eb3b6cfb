import BlobStream
import BlobStreamChecksums
import CBlobStreamZstd
import Foundation

/// Decodes the frames of a seekable zstd file (a regular `ZstdSeekTable`) on several
/// threads and hands the bytes out in order.
///
/// The owner (a `ZstdDataSource`, under its lock) reads each frame's compressed bytes
/// through its upstream reader, in order, and queues them; worker threads each decode a
/// whole frame and check it: exactly one frame of the table's compressed size, decoding to
/// exactly the table's decompressed size, its content checksum (libzstd) and the table's
/// checksum as its own (or, for a frame with no checksum of its own, as the XXH64 of its
/// bytes), and a frame index's placed checksum (`ZstdSeekTable.Frame.placedChecksum`). The
/// owner hands out a frame's bytes only once it was decoded and
/// checked: a damaged frame is an error before any of its bytes, never other bytes.
///
/// Memory is bounded: at most `workers + 2` frames (compressed and decoded) are in flight,
/// so that the workers go on while the owner's reader writes a frame out (into a pipe, say),
/// and only tables whose frames are at most `largestFrame` long are read this way. A frame's
/// buffers are used again for a later frame once its bytes were handed out: a new buffer's
/// pages would be faulted in and zeroed by the kernel again for every frame.
///
/// Thread safety: the queue, `stopped` and every job's result are guarded by `shared`'s
/// condition; the owner's fields are used by one owner, one call at a time; `stop()` may
/// come from any thread.
package final class ZstdParallelFrameReader: @unchecked Sendable {
    // Unchecked Sendable: see "Thread safety" above; the rest is immutable.

    /// The longest frame (decompressed) decoded this way.
    package static let largestFrame: Int64 = 32 << 20

    /// Whether `table` can be read this way on `workers` threads.
    package static func canDecode(_ table: ZstdSeekTable, workers: Int) -> Bool {
        workers > 1 && table.isRegular && table.frames.count > 1
            && table.frames[0].decompressedSize <= largestFrame
            && table.frames.allSatisfy { $0.compressedSize <= 2 * largestFrame }
    }

    /// The memory of one frame in flight: its compressed bytes and its decoded bytes, each
    /// at least as large as the frame needs.
    final class Buffers: @unchecked Sendable {
        // Unchecked Sendable: handed from the owner to one worker and back with its job.
        private(set) var input: UnsafeMutableRawBufferPointer
        private(set) var output: UnsafeMutableRawBufferPointer

        init(input: Int, output: Int) {
            self.input = .allocate(byteCount: max(1, input), alignment: 16)
            self.output = .allocate(byteCount: max(1, output), alignment: 16)
        }

        /// Grows either buffer that is smaller than asked for.
        func reserve(input needed: Int, output wanted: Int) {
            if input.count < needed {
                input.deallocate()
                input = .allocate(byteCount: needed, alignment: 16)
            }
            if output.count < wanted {
                output.deallocate()
                output = .allocate(byteCount: wanted, alignment: 16)
            }
        }

        deinit {
            input.deallocate()
            output.deallocate()
        }
    }

    /// One frame, decoded by one worker.
    final class Job: @unchecked Sendable {
        // Unchecked Sendable: `output` is written by one worker before `done` is set under
        // the shared condition, and read by the owner only after it saw `done` there.
        let index: Int
        let frame: ZstdSeekTable.Frame
        let buffers: Buffers
        /// The frame's compressed bytes (the start of `buffers.input`).
        let input: UnsafeMutableRawBufferPointer
        /// Its decoded bytes (the start of `buffers.output`).
        let output: UnsafeMutableRawBufferPointer
        var done = false
        var error: BlobStreamError?

        init(index: Int, frame: ZstdSeekTable.Frame, buffers: Buffers?) {
            self.index = index
            self.frame = frame
            let (compressed, decoded) = (Int(frame.compressedSize), max(1, Int(frame.decompressedSize)))
            let buffers = buffers ?? Buffers(input: compressed, output: decoded)
            buffers.reserve(input: compressed, output: decoded)
            self.buffers = buffers
            input = UnsafeMutableRawBufferPointer(rebasing: buffers.input[0..<compressed])
            output = UnsafeMutableRawBufferPointer(rebasing: buffers.output[0..<decoded])
        }
    }

    /// What the owner and the workers share.
    private final class Shared: @unchecked Sendable {
        // Unchecked Sendable: every field is guarded by `condition`.
        let condition = NSCondition()
        var queue: [Job] = []
        var stopped = false
    }

    package let table: ZstdSeekTable
    package let name: String
    /// How errors name the table: "the seek table", or a frame index and its path.
    package let tableName: String
    package let workers: Int
    private let upstream: BlobUpstreamReader
    private let windowLog: Int
    private let shared = Shared()

    // MARK: The owner's

    /// Frames read and queued, in order, not all handed out.
    private var inFlight: [Job] = []
    /// The buffers of frames handed out, for the next frames.
    private var spare: [Buffers] = []
    /// The next frame whose compressed bytes are read.
    private var nextFrame: Int
    /// Bytes of `inFlight[0]` handed out (or skipped).
    private var handed = 0
    /// Bytes still to skip before the first one handed out (the offset inside the first frame).
    private var skip: Int64
    /// The decompressed offset of the next byte handed out.
    package private(set) var position: Int64
    /// The end of the last frame some of whose bytes were handed out: every byte before it
    /// was checked.
    package private(set) var checkedUpTo: Int64
    /// Frames whose bytes were all handed out (or skipped).
    package private(set) var framesHandedOut = 0
    private var failure: BlobStreamError?

    /// Makes a reader that hands out the bytes from decompressed `offset`, on `workers`
    /// threads; moves `upstream` to the start of the frame that holds it. `tableName` names
    /// the table in errors.
    package init(
        table: ZstdSeekTable, offset: Int64, upstream: BlobUpstreamReader, name: String, windowLog: Int,
        workers: Int, tableName: String = "the seek table"
    ) throws(BlobStreamError) {
        let index = table.frameIndex(containing: offset) ?? table.frames.count - 1
        let frame = table.frames[index]
        try upstream.seek(to: frame.compressedOffset)
        self.table = table
        self.name = name
        self.tableName = tableName
        self.workers = workers
        self.upstream = upstream
        self.windowLog = windowLog
        self.nextFrame = index
        self.skip = offset - frame.decompressedOffset
        self.position = offset
        self.checkedUpTo = frame.decompressedOffset
        for _ in 0..<workers {
            let shared = shared
            let decoder = FrameDecoder(table: table, name: name, tableName: tableName, windowLog: windowLog)
            Thread { Self.work(shared, decoder) }.start()
        }
    }

    deinit { stop() }

    /// Ends the workers (a frame being decoded is finished first); later reads fail.
    package func stop() {
        shared.condition.lock()
        shared.stopped = true
        shared.queue.removeAll()
        shared.condition.broadcast()
        shared.condition.unlock()
    }

    /// Copies up to `capacity` of the next bytes into `buffer`.
    package func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> ZstdReader.Step {
        switch next(atMost: capacity) {
        case .bytes(let bytes):
            buffer.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            return .bytes(bytes.count)
        case .end: return .end
        case .failed(let error): return .failed(error)
        }
    }

    /// What `lend` gives: the next bytes, the end, or the failure.
    package enum Lent {
        /// Bytes of a decoded frame, valid until the next call on this reader.
        case bytes(UnsafeRawBufferPointer)
        case end
        case failed(BlobStreamError)
    }

    /// Lends the rest of the current frame's decoded bytes (consumed: the next call goes on
    /// after them), valid until the next call on this reader.
    package func lend() -> Lent { next(atMost: .max) }

    /// The next up to `limit` bytes, consumed, in the current frame's output.
    private func next(atMost limit: Int) -> Lent {
        if let failure { return .failed(failure) }
        while true {
            do {
                try queueFrames()
            } catch {
                return fail(error)
            }
            guard let job = inFlight.first else {
                if skip > 0 {
                    return fail(
                        BlobStreamError(
                            .invalidOffset,
                            "\(name): offset \(position) is past the end (\(table.decompressedLength) bytes)"))
                }
                return .end
            }
            shared.condition.lock()
            while !job.done && !shared.stopped { shared.condition.wait() }
            let stopped = !job.done
            shared.condition.unlock()
            if stopped { return fail(BlobStreamError(.closed, "\(name): closed")) }
            if let error = job.error { return fail(error) }
            if skip > 0 {
                let n = Int(min(skip, Int64(job.output.count - handed)))
                handed += n
                skip -= Int64(n)
            }
            let remaining = Int(job.frame.decompressedSize) - handed
            if remaining == 0 {
                spare.append(inFlight.removeFirst().buffers)
                handed = 0
                framesHandedOut += 1
                continue
            }
            let n = min(limit, remaining)
            let bytes = UnsafeRawBufferPointer(start: job.output.baseAddress! + handed, count: n)
            handed += n
            position += Int64(n)
            checkedUpTo = job.frame.decompressedOffset + job.frame.decompressedSize
            return .bytes(bytes)
        }
    }

    private func fail(_ error: BlobStreamError) -> Lent {
        if failure == nil { failure = error }
        stop()
        return .failed(failure!)
    }

    /// Reads the compressed bytes of the next frames and queues them, up to `workers + 2`
    /// in flight.
    private func queueFrames() throws(BlobStreamError) {
        while inFlight.count < workers + 2 && nextFrame < table.frames.count {
            let job = Job(index: nextFrame, frame: table.frames[nextFrame], buffers: spare.popLast())
            var filled = 0
            while filled < job.input.count {
                switch upstream.read(
                    into: job.input.baseAddress! + filled, maxLength: job.input.count - filled, waiting: true)
                {
                case .bytes(let n): filled += n
                case .end:
                    throw BlobStreamError(
                        .truncated,
                        "\(name): the input ends at compressed offset \(job.frame.compressedOffset + Int64(filled)), inside frame \(job.index), which \(tableName) says holds \(job.frame.compressedSize) bytes"
                    )
                case .starved:
                    throw BlobStreamError(
                        .sourceFailed,
                        "\(name): the upstream had no bytes at compressed offset \(job.frame.compressedOffset + Int64(filled))"
                    )
                case .failed(let error):
                    throw BlobStreamError(
                        (error as? BlobStreamError)?.code ?? .sourceFailed,
                        "\(name): the upstream failed to read at compressed offset \(job.frame.compressedOffset + Int64(filled)): \(error)",
                        cause: error)
                }
            }
            nextFrame += 1
            inFlight.append(job)
            shared.condition.lock()
            shared.queue.append(job)
            shared.condition.signal()
            shared.condition.unlock()
        }
    }

    /// A worker: takes frames until stopped.
    private static func work(_ shared: Shared, _ decoder: FrameDecoder) {
        while true {
            shared.condition.lock()
            while shared.queue.isEmpty && !shared.stopped { shared.condition.wait() }
            if shared.stopped {
                shared.condition.unlock()
                return
            }
            let job = shared.queue.removeFirst()
            shared.condition.unlock()
            let error = decoder.decode(job)
            shared.condition.lock()
            job.error = error
            job.done = true
            shared.condition.broadcast()
            shared.condition.unlock()
        }
    }
}

/// One worker's libzstd decoder: decodes a whole frame and checks it against its entry.
private final class FrameDecoder: @unchecked Sendable {
    // Unchecked Sendable: used by one worker thread at a time.
    private let context: OpaquePointer?
    private let table: ZstdSeekTable
    private let name: String
    private let tableName: String

    init(table: ZstdSeekTable, name: String, tableName: String, windowLog: Int) {
        self.table = table
        self.name = name
        self.tableName = tableName
        context = ZSTD_createDCtx()
        if let context { ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, Int32(windowLog)) }
    }

    deinit { if let context { ZSTD_freeDCtx(context) } }

    /// Decodes `job` into its output; the error that stops it, or nil.
    func decode(_ job: ZstdParallelFrameReader.Job) -> BlobStreamError? {
        let frame = job.frame
        func corrupt(_ what: String) -> BlobStreamError {
            BlobStreamError(
                .corrupt, "\(name): frame \(job.index) at compressed offset \(frame.compressedOffset): \(what)")
        }
        guard let context else {
            return BlobStreamError(.sourceFailed, "\(name): libzstd could not allocate a decoder")
        }
        let input = UnsafeRawBufferPointer(job.input)
        let size = ZSTD_findFrameCompressedSize(input.baseAddress, input.count)
        guard ZSTD_isError(size) == 0, size == input.count else {
            return corrupt("\(tableName) says \(input.count) bytes, but they do not hold exactly one zstd frame")
        }
        var header = ZSTD_frameHeader()
        guard ZSTD_getFrameHeader(&header, input.baseAddress, input.count) == 0, header.frameType != ZSTD_skippableFrame
        else { return corrupt("not a zstd frame with data") }
        let written = ZSTD_decompressDCtx(
            context, job.output.baseAddress, job.output.count, input.baseAddress, input.count)
        if ZSTD_isError(written) != 0 {
            let reason = ZSTD_getErrorName(written).map { String(cString: $0) } ?? "error \(written)"
            let what =
                ZSTD_getErrorCode(written) == ZSTD_error_checksum_wrong
                ? "the frame's content checksum does not match its bytes" : "corrupt zstd data"
            return corrupt("\(what) (\(reason))")
        }
        guard Int64(written) == frame.decompressedSize else {
            return corrupt("\(tableName) says \(frame.decompressedSize) bytes, but it decoded to \(written)")
        }
        let output = UnsafeRawBufferPointer(rebasing: job.output[..<written])
        if let checksum = frame.checksum {
            if header.checksumFlag != 0 {
                let own = ZstdSeekTable.readUInt32(UnsafeRawBufferPointer(rebasing: input[(input.count - 4)...]), at: 0)
                if own != checksum {
                    return corrupt(
                        "\(tableName)'s checksum of it is \(ZstdReader.hex(checksum)), but the frame's own is \(ZstdReader.hex(own))"
                    )
                }
            } else if case let computed = ZstdReader.low32(XXH64.hash(output)), computed != checksum {
                return corrupt(
                    "it has no checksum of its own and decoded to bytes whose XXH64 is \(ZstdReader.hex(computed)), but \(tableName)'s checksum of it is \(ZstdReader.hex(checksum)): the frame is damaged"
                )
            }
        }
        if let placed = frame.placedChecksum,
            case let computed = ZstdReader.low32(
                XXH64.hash(output, seed: UInt64(bitPattern: frame.decompressedOffset))),
            computed != placed
        {
            return corrupt(
                "\(tableName) places it at decompressed offset \(frame.decompressedOffset), where its bytes' XXH64 is \(ZstdReader.hex(computed)), but the index recorded \(ZstdReader.hex(placed)): the index places it wrongly (an earlier frame's size in it is changed) or the frame is damaged"
            )
        }
        return nil
    }
}
