import BlobStream

/// How a `GzipDataSource` decodes, settled when it is made: whether it reads through a
/// seek-point index, and on how many threads a whole read is decoded.
///
/// A user can check with it that an index was found and used (`GzipSources` looks for a
/// matching `FILE.gz.gzidx` beside a file; `blobstream cat --verbose` prints it).
public struct GzipDecoding: Sendable, Equatable, CustomStringConvertible {
    /// The source reads through a seek-point index (`GzipIndex`): moves jump to a seek
    /// point and every chunk decoded whole is checked against the index's CRC-32.
    public var usesIndex: Bool
    /// How many threads decode a whole read: more than 1 with an index BlobStream built
    /// over an upstream that can seek (see "Parallel decoding" on `GzipDataSource`); 1
    /// otherwise.
    public var threads: Int

    /// Makes one.
    public init(usesIndex: Bool, threads: Int) {
        self.usesIndex = usesIndex
        self.threads = threads
    }

    /// `read through a seek-point index, decoded on 2 threads`, or `read sequentially, no
    /// seek-point index`.
    public var description: String {
        guard usesIndex else { return "read sequentially, no seek-point index" }
        return "read through a seek-point index, decoded on \(threads) thread\(threads == 1 ? "" : "s")"
    }
}

extension GzipDataSource {
    /// How this source decodes (see `GzipDecoding`).
    public var decoding: GzipDecoding {
        lock.lock()
        defer { lock.unlock() }
        return GzipDecoding(usesIndex: gzip.index != nil, threads: gzip.decodingThreads)
    }
}
