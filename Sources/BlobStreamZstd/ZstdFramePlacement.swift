import BlobStream
import BlobStreamCompression

// Where a `ZstdDataSource` learns the places of its frames: the upstream's own seek table,
// or a frame index (given, or found when first needed). It decides whether a move may enter
// a frame directly, and moves the decoder there.

/// The seek table and frame index of one zstd source, looked up once and kept. Not
/// thread-safe: its owner (`ZstdDataSource`) calls it under its lock, with the decoder it
/// guards.
struct ZstdFramePlacement {
    /// Where the frame index stands.
    enum FrameIndexLookUp {
        case given(ZstdFrameIndex)
        case toFind(() throws(BlobStreamError) -> IndexLookUp<ZstdFrameIndex>)
        case found(ZstdFrameIndex)
        case none

        var index: ZstdFrameIndex? {
            switch self {
            case .given(let index), .found(let index): index
            case .toFind, .none: nil
            }
        }
    }

    /// What looking for the seek table found.
    enum SeekTableLookUp {
        case notYet
        /// A table that adds up; used for moves when it is regular.
        case found(ZstdSeekTable)
        /// None: the upstream cannot move, or ends with no table, or a damaged one (why).
        case none(String?)
    }

    /// How errors name the source.
    let name: String
    private(set) var frameIndexLookUp: FrameIndexLookUp
    private(set) var seekTableLookUp: SeekTableLookUp = .notYet
    /// Why a frame index found beside the file was not used.
    var unusedIndexReason: String?

    init(
        name: String, frameIndex: ZstdFrameIndex?,
        findFrameIndex: (() throws(BlobStreamError) -> IndexLookUp<ZstdFrameIndex>)?
    ) {
        self.name = name
        if let frameIndex {
            frameIndexLookUp = .given(frameIndex)
            seekTableLookUp = .found(frameIndex.frames)
        } else if let findFrameIndex {
            frameIndexLookUp = .toFind(findFrameIndex)
        } else {
            frameIndexLookUp = .none
        }
    }

    /// The frame index in use: given, or found; nil otherwise.
    var frameIndex: ZstdFrameIndex? { frameIndexLookUp.index }

    /// How errors name the table frames are entered through: the frame index (and where it
    /// was read from) when there is one, else "the seek table".
    var tableName: String { frameIndex?.tableName ?? "the seek table" }

    /// The seek table (or the frame index's frames) once looked up; nil before and for none.
    var seekTable: ZstdSeekTable? {
        if case .found(let table) = seekTableLookUp { return table }
        return nil
    }

    /// Whether the seek table has been looked for.
    var isLookedUp: Bool {
        if case .notYet = seekTableLookUp { return false }
        return true
    }

    /// Why moves decode from the start although the file ends with a seek table.
    var seekTableNotUsed: String? {
        switch seekTableLookUp {
        case .none(let why): return why
        case .found(let table) where !table.isRegular && frameIndexLookUp.index == nil:
            return
                "\(name): the seek table's frames are not all the same size, so an offset cannot be placed without decoding the frames before it"
        default: return nil
        }
    }

    /// Looks for the upstream's seek table when it has not been looked for; false when that
    /// failed (recorded in `zstd`).
    mutating func lookUpIfNotYet(_ zstd: ZstdReader) -> Bool {
        isLookedUp || lookUpSeekTable(zstd)
    }

    /// Looks for the upstream's seek table once, then, unless it is regular (a seekable file
    /// needs no index), for the frame index to find, when there is one; moves the upstream
    /// back to where the decoder reads. False when the look-up or that move failed (recorded).
    /// On a store the table comes from the object's end, asked for beside the first request:
    /// a seekable object costs no look-up of a `KEY.zstidx`.
    private mutating func lookUpSeekTable(_ zstd: ZstdReader) -> Bool {
        if let index = frameIndexLookUp.index {
            seekTableLookUp = .found(index.frames)
            return true
        }
        do {
            let table = try zstd.readSeekTable()
            seekTableLookUp = table.map { .found($0) } ?? .none(nil)
        } catch {
            seekTableLookUp = .none("\(name): the seek table is not used: \(error.message)")
        }
        do {
            try zstd.returnToDecodingPosition()
        } catch {
            zstd.record(error)
            return false
        }
        if case .found(let table) = seekTableLookUp, table.isRegular { return true }
        guard findFrameIndexIfAsked(zstd) else { return false }
        if let index = frameIndexLookUp.index { seekTableLookUp = .found(index.frames) }
        return true
    }

    /// Runs `findFrameIndex` when it has not run; false when it failed (recorded).
    mutating func findFrameIndexIfAsked(_ zstd: ZstdReader) -> Bool {
        guard case .toFind(let find) = frameIndexLookUp else { return true }
        frameIndexLookUp = .none
        do {
            switch try find() {
            case .matching(let index): frameIndexLookUp = .found(index)
            case .unusable(let reason): unusedIndexReason = reason
            case .absent: break
            }
        } catch {
            zstd.record(error)
            return false
        }
        if let index = frameIndexLookUp.index, !isLookedUp { seekTableLookUp = .found(index.frames) }
        return true
    }

    /// Moves the decoder to the frame that holds `target`, through the seek table, when it
    /// has a regular one (or a frame index) and that skips bytes; false when that failed
    /// (recorded).
    mutating func enter(_ target: Int64, _ zstd: ZstdReader) -> Bool {
        guard lookUpIfNotYet(zstd) else { return false }
        // An offset at or past the end: the last frame, whose end says which.
        // A frame index was made by decoding the frames: its places need not be regular.
        guard let table = seekTable, table.isRegular || frameIndexLookUp.index != nil,
            let index = table.frameIndex(containing: target) ?? table.frames.indices.last
        else { return true }
        let frame = table.frames[index]
        guard target < zstd.produced || frame.decompressedOffset > zstd.produced else { return true }
        do {
            try zstd.restart(atFrame: index, of: table, tableName: tableName)
        } catch {
            zstd.record(error)
            return false
        }
        return true
    }
}
