/// Bytes of a source that lie unchanged in a regular file: a consumer may move them without
/// reading them (`sendfile` into a pipe, `copy_file_range`), so they never pass through the
/// process.
public struct BlobStoredRegion: Sendable, Equatable {
    /// An open descriptor of the file, owned by the source: valid until it closes; a consumer
    /// never closes it, and reads it only at explicit offsets (`pread`, `sendfile` with an
    /// offset), never moving its position.
    public var descriptor: Int32
    /// The file offset of the source's byte at its `readOffset`.
    public var fileOffset: Int64
    /// How many bytes from there belong to the source (up to its end).
    public var count: Int64

    /// A region of `count` bytes at `fileOffset` of `descriptor`.
    public init(descriptor: Int32, fileOffset: Int64, count: Int64) {
        self.descriptor = descriptor
        self.fileOffset = fileOffset
        self.count = count
    }
}

/// A source whose next bytes may lie unchanged in a regular file while nothing checks them:
/// a plain file (`FileDataSource`), an uncompressed tar's member found by walking its headers
/// (`ArchiveMemberDataSource`). A consumer that moved some of a region's bytes itself moves
/// the source past them (`seek(to:)`, through its stream), so that the source stays where a
/// reader of those bytes would have left it.
///
/// ```swift
/// if let region = (stream.dataSource as? any BlobStoredRegionProviding)?.storedRegion {
///     let moved = sendfile(STDOUT_FILENO, region.descriptor, &offset, Int(region.count))
///     try stream.seek(to: start + Int64(moved))
/// }
/// ```
public protocol BlobStoredRegionProviding: BlobDataSource {
    /// Where the bytes from `readOffset` on lie, while the source is open and they are
    /// stored unchanged; nil otherwise (then read them as usual: a decoded, checked or
    /// indexed read always is).
    var storedRegion: BlobStoredRegion? { get }
}
