// cat into a pipe: bytes that lie unchanged in a regular file go by `sendfile`.

import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamSystem

/// Where a stream's next bytes lie unchanged in a regular file while nothing checks them:
/// a plain file (`FileDataSource`), an uncompressed tar's member found by walking its
/// headers (`ArchiveMemberDataSource.storedRegion`). `pump` moves them into a pipe with
/// `sendfile` (`Console.sendOut`), so they never pass through this process, then moves the
/// stream past them (`seek(to:)`), so that the stream and its source stay where a reader of
/// those bytes would have left them.
struct StoredRegions {
    /// A region: the descriptor of the file, the file offset of the stream's next byte, how
    /// many bytes are left there, and the stream offset of that byte.
    struct Region {
        var descriptor: Int32
        var offset: Int64
        var count: Int64
        var streamOffset: Int64
    }

    private let stream: BlobInputStream
    /// A plain file opened again by its path, once it was found to be the source's file.
    private var file: PositionalFile?
    private var fileChecked = false

    /// Nil for a source whose bytes never lie unchanged in a file.
    init?(_ stream: BlobInputStream) {
        guard stream.dataSource is ArchiveMemberDataSource || stream.dataSource is FileDataSource else { return nil }
        self.stream = stream
    }

    /// The region of the stream's next bytes, or nil (then read them as usual).
    mutating func next() -> Region? {
        guard let at = stream.readOffset else { return nil }
        if let member = stream.dataSource as? ArchiveMemberDataSource {
            guard let region = member.storedRegion else { return nil }
            return Region(descriptor: region.descriptor, offset: region.offset, count: region.count, streamOffset: at)
        }
        guard let source = stream.dataSource as? FileDataSource, let length = source.length, at < length,
            let file = plainFile(source)
        else { return nil }
        return Region(descriptor: file.descriptor, offset: at, count: length - at, streamOffset: at)
    }

    /// The file a `FileDataSource` reads, opened here when it is a regular file with the
    /// source's identity (device, inode, size, times); nil otherwise.
    private mutating func plainFile(_ source: FileDataSource) -> PositionalFile? {
        if fileChecked { return file }
        fileChecked = true
        // Looked at before it is opened: opening a FIFO put there since would wait for a writer.
        guard let identity = source.property(forKey: .blobContentIdentityKey) as? String,
            case .success(let before) = FileStatus.at(source.path), before.isRegular, before.identity == identity,
            let opened = try? PositionalFile(path: source.path), let status = try? opened.status(),
            status.isRegular, status.identity == identity
        else { return nil }
        file = opened
        return opened
    }
}
