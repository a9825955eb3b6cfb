import BlobStream
import Foundation

// GzipDataSource with a seek-point index: reading through `GzipIndexWalker` (from a seek
// point, checking chunks; or from the start, building an index). Called with `lock` held,
// except `builtIndex`.
extension GzipDataSource {
    /// The index built during the read (`buildsIndex`), once a read reached the end cleanly;
    /// nil before, and when the read failed or moved backward.
    public var builtIndex: GzipIndex? {
        lock.lock()
        defer { lock.unlock() }
        return built
    }

    /// Decompressed bytes produced so far, by the indexed walker or the decoder.
    var inflated: Int64 {
        if parallelActive, let parallel { return parallel.position }
        return indexed?.produced ?? decoder.inflated
    }
    /// What the engine in use has checked (see `BlobVerifiedPrefix`): the parallel reader
    /// hands out only checked chunks; the indexed walker checks chunks and members; the
    /// decoder checks member trailers.
    public var verifiedPrefix: BlobVerifiedPrefix {
        lock.lock()
        defer { lock.unlock() }
        if parallelActive { return .checked(upTo: decoder.target) }
        if let indexed { return .checked(upTo: indexed.verified) }
        return .checked(upTo: decoder.verified)
    }

    /// The last member ended at the upstream's end.
    var isFinished: Bool {
        if parallelActive, let parallel { return parallel.isFinished }
        return indexed?.isFinished ?? decoder.isFinished
    }

    /// Inflates through the parallel reader or the indexed walker when there is one, else
    /// the decoder. The parallel reader takes over from the decoder after its first bytes
    /// (the probe at open stays cheap: a seek usually follows it).
    func pump(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> GzipDecoder.Output {
        if parallel != nil, !parallelActive, indexed == nil, decoder.failure == nil, decoder.inflated > 0,
            !decoder.isFinished
        {
            // The parallel reader starts at the decoder's last check (a member's trailer, or
            // the start), so that the chunks holding the bytes the decoder handed out are
            // decoded again and checked against the index before any further byte goes out.
            let wanted = decoder.target
            if let error = jump(to: decoder.verified) {
                decoder.record(error)
                return .failed
            }
            decoder.target = wanted
        }
        if parallelActive, let parallel {
            if decoder.failure != nil { return .failed }
            parallel.target = decoder.target
            do {
                let n = try parallel.read(into: out, capacity: capacity, upstream: reader)
                return n > 0 ? .bytes(n) : .end
            } catch {
                decoder.record(error)
                return .failed
            }
        }
        guard let indexed else { return decoder.pump(into: out, capacity: capacity) }
        if decoder.failure != nil { return .failed }
        indexed.target = decoder.target
        do {
            let n = try indexed.read(into: out, capacity: capacity)
            if n == 0, indexed.isFinished, let index = indexed.builtIndex() { built = index }
            return n > 0 ? .bytes(n) : .end
        } catch {
            decoder.record(error)
            return .failed
        }
    }

    /// Starts decoding at the index's seek point at or before `offset`; the refusal, or nil.
    func jump(to offset: Int64) -> BlobStreamError? {
        guard let index else { return nil }
        if let parallel {
            do {
                try parallel.restart(at: offset, upstream: reader)
                parallelActive = true
                indexed = nil
                decoder.target = offset
                return nil
            } catch {
                return decoder.errors.failedJump(to: offset, error)
            }
        }
        do {
            indexed = try GzipIndexWalker.starting(at: offset, of: index, upstream: reader, name: name)
            decoder.target = offset
            return nil
        } catch {
            return decoder.errors.failedJump(to: offset, error)
        }
    }
}
