import BlobStream

/// Builds a `GzipIndex` in one pass while handing the uncompressed bytes to its owner, in
/// order, as they are produced (what `GzipIndex.build(from:spacing:name:)` discards): an
/// archive member index of a tar.gz reads the tar headers and each member's CRC-32 from the
/// same pass that places the seek points.
///
/// Pull-style: call `read(into:capacity:)` until it returns 0 (the end of the last gzip
/// member, every member's CRC-32 and ISIZE checked), then `finish()`. Not thread-safe: one
/// owner. The upstream is read through a `BlobUpstream`, which the builder owns (it closes
/// it in `close()`).
package final class GzipIndexStreamingBuilder {
    private let upstream: BlobUpstream
    private let walker: GzipIndexWalker

    /// Opens `source` (not opened yet) and gets ready to inflate it.
    ///
    /// - Throws: `BlobStreamError` naming `name` when the source fails to open, or the
    ///   inflater cannot start.
    package init(source: any BlobDataSource, spacing: Int, name: String) throws(BlobStreamError) {
        precondition(spacing > 0, "spacing must be positive")
        upstream = BlobUpstream(source)
        do {
            try upstream.waitForOpen()
        } catch {
            upstream.close()
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed, "\(name): failed to open: \(error)", cause: error)
        }
        do {
            walker = try GzipIndexWalker(upstream: upstream, name: name, mode: .build(spacing: spacing))
        } catch {
            upstream.close()
            throw error
        }
    }

    /// The uncompressed offset of the next byte `read` hands out.
    package var produced: Int64 { walker.produced }

    /// Inflates the next uncompressed bytes into `out`: their count, 0 at the clean end.
    ///
    /// - Throws: `BlobStreamError` (`.truncated`, `.corrupt`, the upstream's error), naming
    ///   the source and the compressed offset.
    package func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError) -> Int {
        try walker.read(into: out, capacity: capacity)
    }

    /// The index, once `read` returned 0; nil before.
    package func finish() -> GzipIndex? { walker.builtIndex() }

    /// Closes the upstream.
    package func close() { upstream.close() }
}
