/// What an `HTTPRangeDataSource` asks for next: the size of each block, how many are read
/// ahead, and where the reader said it stops (`expectRead(_:)`).
///
/// After a jump (a seek away from the blocks asked for), reading starts small, as the
/// kernel's read-ahead does: a block of an eighth of `blockSize` (1 MiB for 8 MiB) and one
/// ahead of it, each next block twice as large, until blocks are `blockSize` with `readAhead`
/// of them ahead. A random read of 1 MiB then moves about 3 MiB, not `blockSize × parallelism`
/// (32 MiB); a long read reaches full speed after 15 MiB.
struct RangePlan {
    let blockSize: Int
    let downloadBlockSize: Int?
    let readAhead: Int
    let downloadReadAhead: Int?
    /// The size of the next block asked for after a jump: it starts small and doubles as the
    /// reading goes on, up to `blockSize`.
    var rampSize: Int?
    /// Where the last block handed out ended: a block asked for there is the next one, not a jump.
    var lastBlockEnd: Int64?
    /// The first answer's block was taken: the read-ahead starts at its first read.
    var readsAheadOfFirstBlock = false
    /// The size of the first answer's block when it is not `blockSize`: small after
    /// `expectRandomAccess()`.
    var firstBlockSize: Int?
    /// The end of a range `expectRead(_:)` asked for: no block is read ahead past it.
    var plannedEnd: Int64?
    /// True while the reading goes on from the object's start with no jump and no hint:
    /// a download, whose blocks are `downloadBlockSize`.
    var isDownload = true
    /// `expectRead(_:)` before `open()` named the bytes the first answer is to bring (an
    /// index's head and table).
    var firstRangeExpected = false

    init(options: HTTPRangeOptions) {
        blockSize = options.blockSize
        downloadBlockSize = options.downloadBlockSize
        readAhead = options.readAhead
        downloadReadAhead = options.downloadReadAhead
    }

    /// The first block after a jump: an eighth of the block size, at least 64 KiB.
    var jumpBlockSize: Int { max(64 << 10, blockSize / 8) }

    /// The bytes of the first answer's block.
    var firstBlock: Int { firstBlockSize ?? blockSize }

    /// How many blocks are read ahead: one while the blocks still grow after a jump; in a
    /// download, `downloadReadAhead` when set.
    var aheadLimit: Int {
        guard rampSize == nil else { return min(1, readAhead) }
        return isDownload ? downloadReadAhead ?? readAhead : readAhead
    }

    /// The size of the next block asked for: doubling after a jump, then `blockSize`; in a
    /// download (from the start, no jump, no hint), `downloadBlockSize` when set.
    mutating func nextSize() -> Int {
        guard let ramp = rampSize, ramp < blockSize else {
            rampSize = nil
            return isDownload ? downloadBlockSize ?? blockSize : blockSize
        }
        rampSize = min(ramp * 2, blockSize)
        return ramp
    }

    /// A block is asked for at `offset` by a fresh GET: unless it is where the last block
    /// ended, a jump (the blocks start small again, and this is no download).
    mutating func freshBlock(at offset: Int64) {
        if offset != lastBlockEnd {
            rampSize = jumpBlockSize
            isDownload = false
        }
    }

    /// A block that ends at `end` was handed out: whether the blocks after it are read ahead
    /// (not when a planned range ends there: then the plan is done).
    mutating func readsAhead(afterBlockEndingAt end: Int64) -> Bool {
        lastBlockEnd = end
        guard end == plannedEnd else { return true }
        plannedEnd = nil
        return false
    }

    /// The first read of the first answer's block, ending at `end`: whether the read-ahead
    /// after it starts now (once; not when a planned range ends in that block).
    mutating func startsReadAhead(atFirstBlockEndingAt end: Int64) -> Bool {
        guard readsAheadOfFirstBlock else { return false }
        readsAheadOfFirstBlock = false
        // A planned range that ends in this block (a small member): nothing ahead of it
        // until a read goes past it (then `nextBlock` asks, and reads ahead again).
        guard let planned = plannedEnd, planned <= end else { return true }
        plannedEnd = nil
        return false
    }

    /// The first answer held its block, ending at `end` (nil: nothing, at the object's end).
    mutating func heldFirstBlock(endingAt end: Int64?) {
        lastBlockEnd = end
        readsAheadOfFirstBlock = end != nil
    }

    /// The first answer's block, ending at `end`, was taken: a small first block (random
    /// access expected) ramps up, and the read-ahead starts at its first read (a caller that
    /// only wanted the object's identity, or seeks elsewhere, starts no GET for nothing).
    mutating func tookFirstBlock(endingAt end: Int64) {
        lastBlockEnd = end
        if let firstBlockSize, firstBlockSize < blockSize { rampSize = firstBlockSize * 2 }
        readsAheadOfFirstBlock = true
    }

    /// `expectRandomAccess()`: a small first block (64 KiB, or the block size when smaller).
    mutating func expectRandomAccess() {
        firstBlockSize = min(64 << 10, blockSize)
        isDownload = false
    }

    /// `expectRead(_:)` before `open()`: the first block is `count` bytes (at most `blockSize`).
    mutating func expectFirstBlock(of count: Int64) {
        firstBlockSize = Int(min(count, Int64(blockSize)))
        firstRangeExpected = true
        isDownload = false
    }

    /// A hint that is not a download (`expectEnd(_:)`, `bytes(in:)`).
    mutating func noDownload() { isDownload = false }

    /// `expectRead(_:)` asked for bytes `from..<to` by one GET: a long range (`isLong`: it
    /// goes on past `to`) reads on at full speed; a short one stops there (no block ahead)
    /// and, if a read goes on, starts small again.
    mutating func planned(from: Int64, to: Int64, isLong: Bool) {
        isDownload = false
        plannedEnd = isLong ? nil : to
        rampSize = isLong ? nil : jumpBlockSize
        lastBlockEnd = from
    }
}
