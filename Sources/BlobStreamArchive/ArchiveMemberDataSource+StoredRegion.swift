import BlobStream
import Foundation

// A member stored unchanged in a regular file, for a consumer that moves its bytes without
// reading them (`sendfile` into a pipe): no copy through this process.

extension ArchiveMemberDataSource: BlobStoredRegionProviding {
    /// Where the member's next bytes lie in the archive file, when they are stored there
    /// unchanged and nothing checks them: an uncompressed tar's member found by walking the
    /// headers (a member read through an index, a zip member and anything decoded are read
    /// as usual, so that their checks see every byte). Nil otherwise.
    ///
    /// `descriptor` is the archive file, opened here by its path and given only when it is
    /// the very file the upstream reads (the same `.blobContentIdentityKey`); it stays open
    /// until the source closes. `fileOffset` is the file offset of the member's byte at
    /// `readOffset`, `count` how many bytes of the member are left. A consumer that moved
    /// some of them moves the source past them (`seek(to:)`, through its stream).
    public var storedRegion: BlobStoredRegion? {
        lock.lock()
        defer { lock.unlock() }
        guard life.failure == nil, life.pending == nil, !life.closed, state.isOpenCompleted,
            case .slice(let slice) = reading
        else { return nil }
        return slice.storedRegion(from: target, archivePath: options.archivePath)
    }
}
