import BlobStream
import Foundation
import Synchronization

// What AssetDataSource checks after an invalidation: the runs of bytes handed out, their
// XXH64 hashes (`DeliveredHash`), and the re-read that compares them with the version found.
// See the type's documentation, "What was read belongs to the version read on".

extension AssetDataSource {
    /// Bytes handed out from `start` to `end`, and their hash.
    struct DeliveredRun {
        var start: Int64, end: Int64, digest: UInt64
    }

    enum Recheck {
        case same
        case different(DeliveredRun)
        case invalidated
        case failed(BlobStreamError)
        case closed
    }

    /// With `lock` held, `representation` being the version found again: reads every byte
    /// handed out so far again from it (whole aligned blocks, through the cache) and
    /// compares their hash with the hash of what was handed out.
    func recheckDelivered() -> Recheck {
        guard let cache else { return .closed }
        var runs = earlierRuns
        if position > runStart { runs.append(DeliveredRun(start: runStart, end: position, digest: runHash.digest())) }
        cacheStart = 0
        cacheEnd = 0 // the cache is the scratch buffer: empty from now on
        let block = Int64(blockSize)
        for run in runs {
            var hash = DeliveredHash()
            var at = run.start - run.start % block
            let last = min(size, (run.end + block - 1) / block * block) // the end of the run's last block
            while at < run.end {
                if closing.load(ordering: .relaxed) { return .closed }
                let want = Int(min(Int64(cacheSize), last - at))
                switch getBlock(at: at, count: want, into: cache) {
                case .filled: break
                case .invalidated: return .invalidated
                case .failed(let error): return .failed(error)
                }
                let from = max(run.start, at)
                let to = min(run.end, at + Int64(want))
                hash.combine(cache + Int(from - at), Int(to - from))
                recheckedCount.add(Int(to - from), ordering: .relaxed)
                at += Int64(want)
            }
            if hash.digest() != run.digest { return .different(run) }
        }
        return .same
    }

    /// be checked on resume, and a new run starts at `offset`.
    func move(to offset: Int64) {
        guard offset != position else { return }
        if verifiesDeliveredBytes && position > runStart {
            earlierRuns.append(DeliveredRun(start: runStart, end: position, digest: runHash.digest()))
        }
        runHash = DeliveredHash()
        runStart = offset
        position = offset
    }

    /// Stops: a lookup under way is ignored when it answers (a recheck under way stops at
}
