import BlobStream
import BlobStreamSystem
import Foundation

extension BlobContentIdentity {
    /// The number of 4 KiB samples of the compressed bytes an identity checks.
    public static let sampleCount = 16
    /// The size of one sample.
    public static let sampleSize = 4096

    /// The byte ranges sampled in a file of `size` bytes: 16 ranges of 4 KiB spread evenly
    /// from the first byte to the last (the whole file when it is smaller).
    public static func sampleRanges(forSize size: Int64) -> [Range<Int64>] {
        let length = min(Int64(sampleSize), size)
        return (0..<Int64(sampleCount)).map { i in
            let start = size <= Int64(sampleSize) ? 0 : i * (size - Int64(sampleSize)) / Int64(sampleCount - 1)
            return start..<start + length
        }
    }

    /// The identity of the file at `path` now: its size and modification time (`stat`) and
    /// the CRC-32s of its samples.
    public init(ofFileAtPath path: String) throws(BlobStreamError) {
        let file = try PositionalFile(path: path)
        let status = try file.status()
        var crcs: [UInt32] = []
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.sampleSize, alignment: 16)
        defer { buffer.deallocate() }
        for range in Self.sampleRanges(forSize: status.size) {
            let count = Int(range.count)
            let n = try file.read(into: buffer, count: count, at: range.lowerBound)
            guard n == count else {
                throw BlobStreamError(
                    .changed,
                    "'\(path)': it ended at byte \(range.lowerBound + Int64(n)) while sampled (it is \(status.size) bytes long)"
                )
            }
            crcs.append(ZlibCRC32.update(0, UnsafeRawBufferPointer(start: buffer, count: count)))
        }
        self.init(size: status.size, modified: status.modified, sampleCRC32s: crcs)
    }
}

extension GzipIndex {
    /// Reads an index file (GZIDX, with or without BlobStream's record; a seal at its end,
    /// `IndexSeal`, is set aside unchecked).
    ///
    /// The point table and the record are read now; the windows (32 KiB each, most of the
    /// file) stay in the file, which the index keeps open, and each is read when a decode
    /// needs it (`SeekPoint.loadWindow()`). A file replaced after this (renamed over) does
    /// not change what the index reads.
    public static func read(fromPath path: String) throws(BlobStreamError) -> GzipIndex {
        let file = try PositionalFile(path: path, label: path)
        return try read(from: file, offset: 0, length: IndexSeal.unsealedLength(of: file, length: file.size()))
    }

    /// Writes the index to `path` (replacing a regular file there atomically).
    ///
    /// - Throws: `.unsupported` when a FIFO, a device, a socket or a folder is there (a
    ///   new file renamed over it would replace it); `.ioFailed` naming `path`; for an index read from a file, the error of a
    ///   window that can no longer be read there (`SeekPoint.loadWindow()`).
    public func write(toPath path: String) throws(BlobStreamError) {
        try WriteDestination.check(path, role: "the gzip index")
        let bytes = try serializedLoadingWindows()
        // Written whole or not at all, and nothing left behind by a killed run.
        let written = bytes.withUnsafeBytes { AtomicFileWrite.write($0, to: path) }
        if case .failure(let failure) = written {
            throw failure.error("a temporary file beside '\(path)'", context: "cannot write the gzip index")
        }
    }

    /// The index for the gzip file at `path`: the one named (checked, errors thrown), or the
    /// matching sidecar, or else a new one built now in memory (never written).
    public static func loadOrBuild(
        forFileAtPath path: String, indexPath: String? = nil, spacing: Int = GzipIndex.defaultSpacing
    ) throws(BlobStreamError) -> GzipIndex {
        if case .matching(let index) = try lookUp(forFileAtPath: path, indexPath: indexPath) { return index }
        return try build(fileAtPath: path, spacing: spacing)
    }
}
