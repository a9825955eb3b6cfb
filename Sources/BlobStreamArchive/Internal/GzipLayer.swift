import CBlobStreamZlib

/// A zlib inflater for the gzip layer of an archive, which `UpstreamInput` inflates itself
/// instead of leaving it to libarchive: libarchive (3.6) never checks a gzip member's
/// CRC-32 and ISIZE (its gzip filter leaves that as a to-do), so garbled deflate data that
/// still decodes, or a garbled stored block, would pass unseen. windowBits 15 + 16: zlib
/// parses the gzip header and checks each member's CRC-32 and ISIZE, answering
/// `Z_DATA_ERROR` on a mismatch.
///
/// The `z_stream` lives at a stable heap address from `init` to `deinit` (zlib keeps a
/// pointer back to it in its internal state). Not thread-safe: its owner serializes calls.
final class GzipLayer {
    enum Result {
        /// Progress, or none possible without more input.
        case ok
        /// The current member ended and its CRC-32 and ISIZE matched.
        case memberEnd
        /// zlib refused the data: its message.
        case failed(String)
    }

    /// A gzip member starts with these bytes (magic, then deflate).
    static let magic: [UInt8] = [0x1F, 0x8B, 0x08]

    private let stream: UnsafeMutablePointer<z_stream>

    /// nil when zlib cannot start (no memory).
    init?() {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // `inflateInit2` is a macro that does not import; this is what it expands to.
        guard inflateInit2_(stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            return nil
        }
        self.stream = stream
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Gets ready for the next member.
    func reset() { inflateReset(stream) }

    /// Inflates from `input` into `output`: bytes consumed, bytes produced, how it ended.
    func inflate(_ input: UnsafeRawPointer, count: Int, into output: UnsafeMutableRawPointer, capacity: Int) -> (
        consumed: Int, produced: Int, result: Result
    ) {
        let inCount = UInt32(clamping: count)
        let outCount = UInt32(clamping: capacity)
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = inCount
        stream.pointee.next_out = output.assumingMemoryBound(to: Bytef.self)
        stream.pointee.avail_out = outCount
        let rc = CBlobStreamZlib.inflate(stream, Z_NO_FLUSH)
        let consumed = Int(inCount - stream.pointee.avail_in)
        let produced = Int(outCount - stream.pointee.avail_out)
        stream.pointee.next_in = nil
        stream.pointee.next_out = nil
        let result: Result
        switch rc {
        case Z_OK, Z_BUF_ERROR: result = .ok
        case Z_STREAM_END: result = .memberEnd
        case Z_NEED_DICT: result = .failed("a preset dictionary is required")
        default: result = .failed(stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(rc)")
        }
        return (consumed, produced, result)
    }
}
