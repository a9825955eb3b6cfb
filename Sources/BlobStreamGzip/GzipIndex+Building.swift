import BlobStream
import Foundation

extension GzipIndex {
    /// Builds the index of the gzip stream `source` delivers, in one pass (every member's
    /// CRC-32 and ISIZE are checked on the way). The index has no `identity`: attach one
    /// with `FileIdentity(ofFileAtPath:)`, or use `build(fileAtPath:spacing:)`.
    ///
    /// - Parameters:
    ///   - source: the compressed bytes, not opened yet; opened, read to the end and closed.
    ///   - spacing: the least uncompressed distance between seek points with a window.
    ///   - name: how errors name the source.
    /// - Throws: `BlobStreamError` (`.truncated`, `.corrupt`, the upstream's error).
    public static func build(
        from source: any BlobDataSource, spacing: Int = GzipIndex.defaultSpacing, name: String? = nil
    ) throws(BlobStreamError) -> GzipIndex {
        precondition(spacing > 0, "spacing must be positive")
        let name = name ?? "gzip stream over \(type(of: source))"
        let upstream = BlobUpstream(source)
        defer { upstream.close() }
        do {
            try upstream.waitForOpen()
        } catch {
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed, "\(name): failed to open: \(error)", cause: error)
        }
        let walker = try GzipIndexWalker(upstream: upstream, name: name, mode: .build(spacing: spacing))
        let capacity = 256 * 1024
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        while try walker.read(into: buffer, capacity: capacity) > 0 {}
        return walker.builtIndex()!
    }

    /// Builds the index of the gzip file at `path`, with its identity (taken before the
    /// pass, and checked again after it: a file that changed meanwhile is an error).
    public static func build(fileAtPath path: String, spacing: Int = GzipIndex.defaultSpacing) throws(BlobStreamError)
        -> GzipIndex
    {
        let before = try FileIdentity(ofFileAtPath: path)
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw BlobStreamError(.notFound, "\(path): cannot open the file")
        }
        var index = try build(from: FileHandleReader(handle: handle), spacing: spacing, name: path)
        let after = try FileIdentity(ofFileAtPath: path)
        guard before == after, index.compressedSize == after.size else {
            throw BlobStreamError(.changed, "\(path): the file changed while it was indexed")
        }
        index.identity = after
        return index
    }
}

/// A minimal synchronous source over an open file handle, so that building an index from a
/// path needs no sibling module (`BlobStreamFiles`).
final class FileHandleReader: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: one owner calls it (the index builder), one call at a time.
    let state = BlobDataSourceState()
    private let handle: FileHandle
    private var offset: Int64 = 0

    init(handle: FileHandle) { self.handle = handle }

    var length: Int64? { nil }
    var offsetCapability: BlobOffsetCapability { .seek }
    var completionContext: BlobCompletionContext { .caller }

    func open() {
        state.isOpenCompleted = true
        state.hasBytesAvailable = true
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let n = pread(handle.fileDescriptor, buffer, maxLength, off_t(offset))
        if n < 0 {
            state.error = BlobStreamError(.ioFailed, "read failed: errno \(errno)")
            return -1
        }
        if n == 0 { state.isAtEnd = true }
        offset += Int64(n)
        return n
    }

    var readOffset: Int64? { offset }

    func seek(to offset: Int64) throws(BlobStreamError) {
        self.offset = offset
        state.isAtEnd = false
        state.hasBytesAvailable = true
    }

    func close() { try? handle.close() }
}
