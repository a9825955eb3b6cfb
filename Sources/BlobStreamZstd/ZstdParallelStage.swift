import BlobStream
import BlobStreamCompression

// When a `ZstdDataSource` hands its frames to threads of their own: after a whole frame was
// decoded on the caller's thread, a seekable file with a regular table goes on in parallel.

/// The parallel decoding of one zstd source: whether it runs, was declined, and how many
/// frames it handed out. Not thread-safe: its owner (`ZstdDataSource`) calls it under its
/// lock.
struct ZstdParallelStage {
    /// How many threads decode at once; 1 never starts the stage.
    let workers: Int
    /// The running reader, from the first read that went on past a whole frame; nil otherwise.
    private(set) var frames: ZstdParallelFrameReader?
    /// A table that cannot be decoded in parallel was found: decode in turn.
    private var declined = false
    /// Frames handed out by readers that were stopped (at a move).
    private var framesBefore = 0

    init(workers: Int) { self.workers = workers }

    /// Frames decoded on other threads and handed out so far.
    var framesHandedOut: Int { framesBefore + (frames?.framesHandedOut ?? 0) }

    /// Stops the reader, if one runs: the next read starts again in turn.
    mutating func stop() {
        guard let frames else { return }
        frames.stop()
        framesBefore += frames.framesHandedOut
        self.frames = nil
    }

    /// At a frame's end, after a whole frame was decoded: goes on decoding the next frames on
    /// several threads when `workers` is more than one and the upstream is a seekable file
    /// whose table is regular, with frames no larger than `ZstdParallelFrameReader.largestFrame`,
    /// and places the next frame where the decoder stands; false when that failed (recorded
    /// in `zstd`).
    mutating func startIfWorth(
        at target: Int64, _ zstd: ZstdReader, _ placement: inout ZstdFramePlacement
    ) -> Bool {
        guard workers > 1, !declined else { return true }
        // Every compressed byte taken: no frame is left to decode in parallel.
        if let length = zstd.upstream.length, zstd.compressedOffset >= length { return true }
        guard placement.lookUpIfNotYet(zstd) else { return false }
        guard let table = placement.seekTable, ZstdParallelFrameReader.canDecode(table, workers: workers) else {
            declined = true
            return true
        }
        guard let index = table.frameIndex(containing: target) else { return true } // at the end
        let next = table.frames[index]
        guard next.decompressedOffset == target, next.compressedOffset == zstd.compressedOffset else {
            // The table does not place the next frame where the decoder found it: go on in turn.
            declined = true
            return true
        }
        do {
            frames = try ZstdParallelFrameReader(
                table: table, offset: target, upstream: zstd.upstream, name: zstd.name, windowLog: zstd.windowLog,
                workers: workers, tableName: placement.tableName)
        } catch {
            zstd.record(error)
            return false
        }
        return true
    }
}
