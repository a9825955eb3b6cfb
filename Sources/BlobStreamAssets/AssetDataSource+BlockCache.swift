import BlobStream
import Foundation
import Synchronization

// The block cache of AssetDataSource and its hot read path: whole aligned blocks from
// `getBytes`, straight into the caller's buffer when it has room, else through the cache.

extension AssetDataSource {
    /// What filling blocks gave.
    enum Fill {
        case filled
        case invalidated
        case failed(BlobStreamError)
    }

    // MARK: - Blocks

    /// The bytes the cache holds when full.
    var cacheSize: Int { blockSize * cachedBlocks }

    /// Fills the cache from the block holding `offset` on. Called by the owner in phase
    /// `.ready`, or with `lock` held.
    func fillCache(at offset: Int64) -> Fill {
        guard let cache else {
            return .failed(AssetErrors.closed(url: url))
        }
        let start = offset - offset % Int64(blockSize)
        cacheStart = start
        cacheEnd = start // empty until filled
        let want = Int(min(Int64(cacheSize), size - start))
        let fill = getBlock(at: start, count: want, into: cache)
        if case .filled = fill { cacheEnd = start + Int64(want) }
        return fill
    }

    /// Reads `count` bytes at `start` (a multiple of `blockSize`) into `destination`: the
    /// cache, or a caller's buffer; whole blocks, or up to the asset's end.
    func getBlock(at start: Int64, count want: Int, into destination: UnsafeMutableRawPointer) -> Fill {
        guard let rep = representation else {
            return .failed(AssetErrors.closed(url: url))
        }
        var got = 0
        while got < want {
            getBytesCount.add(1, ordering: .relaxed)
            let n: Int
            do {
                n = try rep.getBytes(into: destination + got, fromOffset: start + Int64(got), length: want - got)
            } catch let error as BlobStreamError where error.code == .invalidated {
                invalidationCount.add(1, ordering: .relaxed)
                return .invalidated
            } catch {
                return .failed(
                    AssetErrors.naming(error, url: url, context: "cannot read at offset \(start + Int64(got)) of"))
            }
            if n <= 0 {
                return .failed(
                    AssetErrors.endedEarly(url: url, offset: start + Int64(got), size: size))
            }
            got += min(n, want - got)
        }
        return .filled
    }

    // MARK: - Reading

    /// Copies from the cache, or reads whole blocks straight into `buffer`; reads the next
    /// blocks as the buffer needs them (see "Reading across an invalidation").
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard state.hasBytesAvailable else { return readWithoutBytes(buffer, maxLength: maxLength) }
        return copy(into: buffer, maxLength: maxLength)
    }

    /// The hot path, in phase `.ready` with `position < size`.
    @inline(__always)
    func copy(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard let cache else { return 0 }
        var copied = 0
        while copied < maxLength && position < size {
            if position >= cacheEnd || position < cacheStart {
                // Nothing cached here. At a block boundary, the whole blocks the buffer has
                // room for go straight into it, in one getBytes; anything else goes through
                // the cache.
                let room = maxLength - copied
                let rest = size - position
                var direct: Int?
                if position % Int64(blockSize) == 0 && (room >= blockSize || Int64(room) >= rest) {
                    direct = Int64(room) >= rest ? Int(rest) : room - room % blockSize
                }
                let fill =
                    direct.map { getBlock(at: position, count: $0, into: buffer + copied) } ?? fillCache(at: position)
                switch fill {
                case .filled:
                    guard let direct else { break } // the cache now holds `position`
                    if verifiesDeliveredBytes { runHash.combine(buffer + copied, direct) }
                    copied += direct
                    position += Int64(direct)
                    continue
                case .invalidated:
                    // The bytes copied so far are good; none past them is handed out until
                    // the asset was looked up again ("nothing yet" when there are none).
                    beginLookingAgain()
                    return copied == 0 && state.error != nil ? -1 : copied
                case .failed(let error):
                    lock.withLock { phase = .failed }
                    state.error = error
                    return copied == 0 ? -1 : copied
                }
            }
            let n = min(Int(cacheEnd - position), maxLength - copied)
            UnsafeMutableRawPointer(buffer + copied).copyMemory(from: cache + Int(position - cacheStart), byteCount: n)
            if verifiesDeliveredBytes { runHash.combine(buffer + copied, n) }
            copied += n
            position += Int64(n)
        }
        if position == size {
            // The bytes copied are handed out; the end only once the version is confirmed.
            endOfRead()
            return copied == 0 && state.error != nil ? -1 : copied
        }
        return copied
    }

    /// A read while `hasBytesAvailable` is false: at the end, after an error, or a caller
    /// that did not wait.
    func readWithoutBytes(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if state.isAtEnd { return 0 }
        if state.error != nil { return -1 }
        let phase = lock.withLock { self.phase }
        let error: BlobStreamError
        switch phase {
        case .ready where position < size:
            return copy(into: buffer, maxLength: maxLength) // announcement under way
        case .ready where position == size:
            endOfRead() // the end, or "nothing yet" while the asset is looked up again
            return state.error != nil ? -1 : 0
        case .idle:
            error = AssetErrors.notOpen(url: url)
        case .opening:
            error = AssetErrors.stillLookingUp(url: url)
        case .looking:
            error = AssetErrors.lookingUpAgain(url: url)
        case .closed:
            error = AssetErrors.closed(url: url)
        default:
            error = AssetErrors.cannotRead(url: url)
        }
        state.error = error
        return -1
    }
}
