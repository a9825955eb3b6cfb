import BlobStream
import CBlobStreamZstd

/// Compresses bytes into zstd's seekable format: independent frames of `frameSize`
/// decompressed bytes each (the last one shorter), each with its content size and content
/// checksum, then the seek table with every frame's checksum (`ZstdSeekTable`). Any zstd
/// decoder reads the result as one stream; a seekable reader (`ZstdDataSource`, pyzstd's
/// `SeekableZstdFile`, indexed_zstd) enters it at any offset by decoding one frame.
///
/// ```swift
/// let compressor = try ZstdSeekableCompressor(level: 3, frameSize: 4 << 20)
/// try compressor.append(chunk) { frame in output.append(contentsOf: frame) }
/// try compressor.finish { bytes in output.append(contentsOf: bytes) }
/// ```
///
/// Memory: one frame of input and one of output (about twice `frameSize`).
public final class ZstdSeekableCompressor {
    /// The default frame size, 4 MiB: what pyzstd's and t2sz's users commonly pick, and one
    /// frame's decode per random read.
    public static let defaultFrameSize = 4 << 20
    /// The largest frame size: the seek table's fields are 32-bit.
    public static let maximumFrameSize = 1 << 30

    /// The decompressed bytes of every frame but the last.
    public let frameSize: Int
    /// The zstd compression level.
    public let level: Int

    private let context: OpaquePointer
    private let pending: UnsafeMutableRawPointer
    private var pendingCount = 0
    private let output: UnsafeMutableRawPointer
    private let outputCapacity: Int
    private var sizes: [(compressed: UInt32, decompressed: UInt32, checksum: UInt32?)] = []
    private var finished = false

    /// Makes a compressor.
    ///
    /// - Parameters:
    ///   - level: the zstd level (1 to `ZSTD_maxCLevel()`, 19 or 22; negative levels are faster).
    ///   - frameSize: the decompressed bytes of each frame, 1 byte to 1 GiB.
    /// - Throws: `.unsupported` for a frame size or level out of range.
    public init(level: Int = 3, frameSize: Int = ZstdSeekableCompressor.defaultFrameSize) throws(BlobStreamError) {
        guard (1...Self.maximumFrameSize).contains(frameSize) else {
            throw BlobStreamError(
                .unsupported, "the frame size \(frameSize) is not between 1 and \(Self.maximumFrameSize) bytes")
        }
        guard (Int(ZSTD_minCLevel())...Int(ZSTD_maxCLevel())).contains(level), level != 0 else {
            throw BlobStreamError(
                .unsupported,
                "the zstd level \(level) is not between \(ZSTD_minCLevel()) and \(ZSTD_maxCLevel()) (nor 0)")
        }
        guard let context = ZSTD_createCCtx() else {
            throw BlobStreamError(.sourceFailed, "libzstd could not allocate a compressor")
        }
        ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, Int32(level))
        ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1)
        ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 1)
        self.context = context
        self.level = level
        self.frameSize = frameSize
        self.pending = .allocate(byteCount: frameSize, alignment: 16)
        self.outputCapacity = ZSTD_compressBound(frameSize)
        self.output = .allocate(byteCount: outputCapacity, alignment: 16)
    }

    deinit {
        ZSTD_freeCCtx(context)
        pending.deallocate()
        output.deallocate()
    }

    /// The table of the frames written so far (the whole file's, after `finish`).
    public var seekTable: ZstdSeekTable { ZstdSeekTable(sizes: sizes) }

    /// Takes `bytes`; hands each frame it completes to `emit`, in order.
    public func append(_ bytes: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        precondition(!finished, "append after finish")
        var rest = bytes
        while !rest.isEmpty {
            let n = min(rest.count, frameSize - pendingCount)
            (pending + pendingCount).copyMemory(from: rest.baseAddress!, byteCount: n)
            pendingCount += n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            if pendingCount == frameSize { try emit(compressPending()) }
        }
    }

    /// Compresses what is left as the last frame, then hands it and the seek table to `emit`.
    public func finish(emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        precondition(!finished, "finish twice")
        finished = true
        if pendingCount > 0 { try emit(compressPending()) }
        try seekTable.encoded().withUnsafeBytes { try emit($0) }
    }

    /// One frame of the pending bytes, recorded in the table.
    private func compressPending() throws(BlobStreamError) -> UnsafeRawBufferPointer {
        let written = ZSTD_compress2(context, output, outputCapacity, pending, pendingCount)
        guard ZSTD_isError(written) == 0 else {
            let name = ZSTD_getErrorName(written).map { String(cString: $0) } ?? "error \(written)"
            throw BlobStreamError(.sourceFailed, "libzstd failed to compress a frame of \(pendingCount) bytes: \(name)")
        }
        let frame = UnsafeRawBufferPointer(start: output, count: written)
        // The frame's last 4 bytes are its content checksum: the table's too.
        let checksum = ZstdSeekTable.readUInt32(UnsafeRawBufferPointer(rebasing: frame[(written - 4)...]), at: 0)
        sizes.append((UInt32(written), UInt32(pendingCount), checksum))
        pendingCount = 0
        return frame
    }
}
