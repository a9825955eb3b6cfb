import BlobStream
import Foundation

// ArchiveMemberDataSource's offsets: where the next byte comes from, and moving in the member
// (before open, forward by skipping, backward by reading the archive again).
extension ArchiveMemberDataSource {
    /// The member offset of the next byte (before open, where reading will start). Also
    /// answers `.fileCurrentOffsetKey` (the core's shim).
    public var readOffset: Int64? {
        lock.lock()
        defer { lock.unlock() }
        return target
    }

    /// Moves in the member. Before open: where reading starts (an offset past the member's
    /// size then fails the open with `.invalidOffset`). After: forward by skipping bytes,
    /// backward by reading the archive again from its start, which needs an upstream that
    /// can go back to offset 0. Also serves `.fileCurrentOffsetKey` (the core's shim).
    ///
    /// - Throws: `.invalidOffset` for a negative offset, one past the member's size, or a
    ///   backward move the upstream cannot make; `.closed` after `close()`; the source's
    ///   error after it failed. A refused move changes nothing.
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else { throw makeError(.invalidOffset, "offset \(offset) is negative") }
        lock.lock()
        defer { lock.unlock() }
        if life.closed { throw makeError(.closed, "closed") }
        if let failure = life.failure { throw failure }
        guard life.started, state.isOpenCompleted else {
            target = offset // applied (and checked) when the open completes
            return
        }
        if let memberLength, offset > memberLength {
            throw makeError(.invalidOffset, "offset \(offset) is past the end of the member (\(memberLength) bytes)")
        }
        if case .slice(let slice) = reading {
            // Read where the bytes are: any move is an offset (a CRC to check reads what it skips).
            target = offset
            if slice.move(to: offset) {
                state.isAtEnd = true
            } else {
                if state.isAtEnd { state.isAtEnd = false }
                state.hasBytesAvailable = true
            }
            return
        }
        if offset < reading?.produced ?? 0 {
            // Bytes before `offset` were already taken from libarchive: start again.
            guard reader.rewindArchive() else {
                throw makeError(
                    .invalidOffset,
                    "offset \(offset) is before the bytes already read, and the upstream (\(type(of: upstream))) cannot go back to the start of the archive"
                )
            }
            do {
                try locate()
            } catch {
                fail(error)
                throw error
            }
            life.pending = nil
        }
        target = offset
        if case .libarchive(let libarchive) = reading, libarchive.isFinished && target == libarchive.produced {
            state.isAtEnd = true
        } else {
            if state.isAtEnd { state.isAtEnd = false }
            state.hasBytesAvailable = true
        }
    }
}
