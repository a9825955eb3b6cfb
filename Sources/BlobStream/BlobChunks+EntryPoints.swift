import Foundation

// Where to find `BlobChunks` from what a user holds, as `FileHandle.bytes` and
// `URL.resourceBytes` are found from theirs.

extension BlobDataSource {
    /// The source's bytes as an `AsyncSequence` of `Data` chunks of at most `size` bytes,
    /// read through a synchronous `BlobInputStream` off the cooperative thread pool (see
    /// `BlobChunks`). The sequence owns the source from now on: it opens it, reads it once
    /// and closes it.
    ///
    /// ```swift
    /// for try await chunk in source.chunks() { hasher.update(data: chunk) }
    /// ```
    public func chunks(size: Int = 64 * 1024) -> BlobChunks { BlobChunks(dataSource: self, chunkSize: size) }
}

extension BlobInputStream {
    /// The stream's bytes as an `AsyncSequence` of `Data` chunks of at most `size` bytes
    /// (see `BlobChunks`). Call it on a stream not opened or read yet; the sequence opens,
    /// reads and closes it.
    public func chunks(size: Int = 64 * 1024) -> BlobChunks { BlobChunks(stream: self, chunkSize: size) }
}

extension DataSourceRegistry {
    /// The bytes of the source this registry makes for `url` (read as `url.absoluteString`),
    /// as an `AsyncSequence` of `Data` chunks of at most `size` bytes:
    ///
    /// ```swift
    /// for try await chunk in try registry.chunks(url: URL(fileURLWithPath: "/data/a.jpg")) { … }
    /// ```
    ///
    /// - Throws: what `makeSource(url:)` throws; the source's own errors are thrown by the
    ///   iteration.
    public func chunks(url: URL, size: Int = 64 * 1024) throws -> BlobChunks {
        try makeSource(url: url).chunks(size: size)
    }

    /// The `String` form of `chunks(url:size:)`, for URLs as the registry's grammar spells
    /// them (`gzip:file:///data/a.gz`).
    ///
    /// - Throws: what `makeSource(url:)` throws.
    public func chunks(url: String, size: Int = 64 * 1024) throws -> BlobChunks {
        try makeSource(url: url).chunks(size: size)
    }
}
