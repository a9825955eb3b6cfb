// cat into a pipe: bytes that lie unchanged in a regular file go by `sendfile`.

import BlobStream

/// Where a stream's next bytes lie unchanged in a regular file while nothing checks them,
/// as its source says (`BlobStoredRegionProviding`: a plain file, an uncompressed tar's
/// member found by walking its headers). `pump` moves them into a pipe with `sendfile`
/// (`Console.sendOut`), so they never pass through this process, then moves the stream past
/// them (`seek(to:)`), so that the stream and its source stay where a reader of those bytes
/// would have left them.
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
    private let source: any BlobStoredRegionProviding

    /// Nil for a source whose bytes never lie unchanged in a file.
    init?(_ stream: BlobInputStream) {
        guard let source = stream.dataSource as? any BlobStoredRegionProviding else { return nil }
        self.stream = stream
        self.source = source
    }

    /// The region of the stream's next bytes, or nil (then read them as usual).
    func next() -> Region? {
        guard let at = stream.readOffset, let region = source.storedRegion else { return nil }
        return Region(descriptor: region.descriptor, offset: region.fileOffset, count: region.count, streamOffset: at)
    }
}
