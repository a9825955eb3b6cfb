import BlobStream
import Foundation

// Reading: lending blocks, and what the member's checks vouch for (the second half of the
// state machine; `read` is in `ArchiveMemberDataSource.swift`). The member's bytes come from
// its `MemberReader`; everything below `getBuffer` runs with `lock` held.

extension ArchiveMemberDataSource {
    /// Lends the rest of libarchive's current data block (for an uncompressed tar, the
    /// block read from the upstream) instead of copying it: the bytes are consumed and stay
    /// valid until the next call. False, consuming nothing, where `read` has work to do
    /// (a hole of a sparse member, the end, an error, before the open completed).
    ///
    /// The end is confirmed by the next call, not with the last bytes lent (confirming
    /// it means asking libarchive for more, which would end the loan early), so a check
    /// that fails there (a zip CRC) fails that next call.
    public func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>
    ) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard life.failure == nil, life.pending == nil, !life.closed, let reading, state.isOpenCompleted else {
            return false
        }
        switch reading {
        case .slice(let slice):
            return slice.lend(buffer, length: length, target: &target)
        case .libarchive(let libarchive):
            do {
                return try libarchive.lend(buffer, length: length, target: &target)
            } catch {
                fail(error)
                return false
            }
        }
    }

    /// What the checks of this member vouch for (see `BlobVerifiedPrefix`): every byte once
    /// the member ended cleanly (its checks passed), none before. `.nothingToCheck` where
    /// nothing checks a member's bytes: an uncompressed tar, cpio, ar or ISO 9660 member
    /// read without an index over an upstream that checks nothing (over a gzip source with an
    /// index, a member walked in place waits for the source's chunk checks: its prefix is what
    /// they covered; over one that cannot seek, the checks come at the archive's end in
    /// `.wholeArchive` mode), and one of a compressed one read in
    /// `.memberOnly` mode (its filter's checks come after the member), and a tar.zst whose
    /// zstd frame has no content checksum. A zip or 7z member's CRC-32, an indexed
    /// member's CRC-32 and a filter's checks in `.wholeArchive` mode come at the member's
    /// end: a reader that stops early reads on to it.
    public var verifiedPrefix: BlobVerifiedPrefix {
        lock.lock()
        defer { lock.unlock() }
        if state.isAtEnd && life.failure == nil && life.pending == nil && state.error == nil {
            return .checked(upTo: memberLength ?? reading?.produced ?? 0)
        }
        // Not located yet (or closed): assume checks.
        guard !life.closed, let reading else { return .checked(upTo: 0) }
        return reading.verifiedPrefix
    }
}
