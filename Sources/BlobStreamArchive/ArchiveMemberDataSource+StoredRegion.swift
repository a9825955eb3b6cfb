import BlobStream
import BlobStreamSystem
import Foundation

// A member stored unchanged in a regular file, for a consumer that moves its bytes without
// reading them (`sendfile` into a pipe): no copy through this process.

extension ArchiveMemberDataSource {
    /// Where the member's next bytes lie in the archive file, when they are stored there
    /// unchanged and nothing checks them: an uncompressed tar's member found by walking the
    /// headers (a member read through an index, a zip member and anything decoded are read
    /// as usual, so that their checks see every byte). Nil otherwise.
    ///
    /// `descriptor` is the archive file, opened here by its path and given only when it is
    /// the very file the upstream reads (the same `.blobContentIdentityKey`); it stays open
    /// until the source closes. `offset` is the file offset of the member's byte at
    /// `readOffset`, `count` how many bytes of the member are left. A consumer that moved
    /// some of them moves the source past them (`seek(to:)`, through its stream).
    package var storedRegion: (descriptor: Int32, offset: Int64, count: Int64)? {
        lock.lock()
        defer { lock.unlock() }
        guard failure == nil, pending == nil, !closed, state.isOpenCompleted, let s = slice, s.inflation == nil,
            s.decompression == nil, s.expectedCRC == nil, target < s.length, let file = storedBytesFile()
        else { return nil }
        return (file.descriptor, s.start + target, s.length - target)
    }

    /// The archive file opened by its path, once, when it is the file the upstream reads
    /// (a regular file with the upstream's identity); nil otherwise.
    private func storedBytesFile() -> PositionalFile? {
        if storedBytesFileChecked { return storedBytes }
        storedBytesFileChecked = true
        // Looked at before it is opened: opening a FIFO put there since would wait for a writer.
        guard let path = archivePath, let identity = upstream.property(forKey: .blobContentIdentityKey) as? String,
            case .success(let before) = FileStatus.at(path), before.isRegular, before.identity == identity,
            let file = try? PositionalFile(path: path), let status = try? file.status(), status.isRegular,
            status.identity == identity
        else { return nil }
        storedBytes = file
        return file
    }
}
