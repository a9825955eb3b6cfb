import BlobStream

/// A data source over an archive source's upstream reader, so that a `GzipDataSource` can
/// read the compressed bytes of a tar.gz the archive source already holds open. It does not
/// own the reader: `close()` does nothing (the archive source closes its reader). Used only
/// under the archive source's lock, by the gzip source it feeds, over a synchronous upstream.
final class UpstreamReaderSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: one owner (the gzip source, under the archive source's lock).
    let state = BlobDataSourceState()
    private let reader: BlobUpstream

    init(reader: BlobUpstream) { self.reader = reader }

    var length: Int64? { reader.length }
    var offsetCapability: BlobOffsetCapability { .seek }
    var completionContext: BlobCompletionContext { .caller }

    func open() {
        state.isOpenCompleted = true
        state.hasBytesAvailable = true
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        switch reader.read(into: buffer, maxLength: maxLength, waiting: true) {
        case .bytes(let n): return n
        case .end:
            state.isAtEnd = true
            return 0
        case .starved:
            state.error = BlobStreamError(.sourceFailed, "the archive's upstream had no bytes for a waiting read")
            return -1
        case .failed(let error):
            let own = reader.source.error ?? error
            state.error =
                own as? BlobStreamError
                ?? BlobStreamError(.sourceFailed, "the archive's upstream failed: \(own)", cause: own)
            return -1
        }
    }

    var readOffset: Int64? { reader.offset }

    func seek(to offset: Int64) throws(BlobStreamError) {
        try reader.seek(to: offset)
        state.isAtEnd = false
        state.hasBytesAvailable = true
    }

    func close() {}
}
