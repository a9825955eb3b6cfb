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
    /// Why an index found for the source was not used (stale, damaged, foreign, made for
    /// another object), when whoever looked it up said so (`GzipDataSource.unusedIndexReason`).
    public var unusedIndex: String?

    /// Makes one.
    public init(usesIndex: Bool, threads: Int, unusedIndex: String? = nil) {
        self.usesIndex = usesIndex
        self.threads = threads
        self.unusedIndex = unusedIndex
    }

    /// `read through a seek-point index, decoded on 2 threads`, or `read sequentially, no
    /// seek-point index`, followed by `; an index was found but not used: REASON`.
    public var description: String {
        let how =
            usesIndex
            ? "read through a seek-point index, decoded on \(threads) thread\(threads == 1 ? "" : "s")"
            : "read sequentially, no seek-point index"
        return how + (unusedIndex.map { "; an index was found but not used: \($0)" } ?? "")
    }
}

extension GzipDataSource {
    /// How this source decodes (see `GzipDecoding`).
    public var decoding: GzipDecoding {
        lock.lock()
        defer { lock.unlock() }
        return GzipDecoding(usesIndex: gzip.index != nil, threads: gzip.decodingThreads, unusedIndex: unusedIndex)
    }

    /// Why an index found for this source was not used, as whoever looked it up says (a
    /// stale or damaged sidecar, an index object made for another version of the object);
    /// `decoding` reports it, and `blobstream cat --verbose` prints it. Nil by default.
    public var unusedIndexReason: String? {
        get {
            lock.lock()
            defer { lock.unlock() }
            return unusedIndex
        }
        set {
            lock.lock()
            defer { lock.unlock() }
            unusedIndex = newValue
        }
    }
}

extension GzipDataSource: BlobReadReporting {
    /// `decoding`'s description: through a seek-point index or not, on how many threads.
    public var readingNote: String? { decoding.description }
    /// True when a whole read is decoded on more than one thread (`decoding.threads`).
    public var decodesOnThreadsOfItsOwn: Bool { decoding.threads > 1 }
}
