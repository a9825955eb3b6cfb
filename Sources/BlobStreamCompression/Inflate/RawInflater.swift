import CBlobStreamZlib

/// A raw-deflate inflater (windowBits −15: no gzip header or trailer, the caller parses
/// those) for the seek-point index: it stops at deflate block boundaries (`Z_BLOCK`) so the
/// index can record where a block starts, and it resumes in the middle of a member from a
/// seek point (`inflatePrime` with the bits of the byte before the point,
/// `inflateSetDictionary` with the 32 KiB of output before it), as zlib's `examples/zran.c`
/// describes.
///
/// The `z_stream` lives at a stable heap address until `deinit`. Not thread-safe: its owner
/// serializes calls.
final class RawInflater {
    /// What one call to `inflate` did.
    struct Step {
        /// Input bytes zlib consumed.
        var consumed: Int
        /// Output bytes zlib wrote.
        var produced: Int
        /// The deflate stream (the member's compressed data) ended.
        var streamEnd: Bool
        /// zlib's error, when it refused the data.
        var error: ZlibError?
    }

    /// The size of deflate's window, which a seek point carries.
    static let windowSize = 32 * 1024

    private let stream: UnsafeMutablePointer<z_stream>

    /// Allocates and initializes the `z_stream`.
    init() throws(ZlibError) {
        let stream = try ZlibInflateStream.make(windowBits: -15)
        self.stream = stream
    }

    deinit {
        ZlibInflateStream.free(stream)
    }

    /// Starts a new deflate stream (a member's data, or a seek point): the window is emptied.
    func reset() throws(ZlibError) {
        let rc = inflateReset(stream)
        guard rc == Z_OK else { throw ZlibError(rc, stream) }
    }

    /// Resumes at a seek point: `bits` (0...7) high bits of `byte` (the byte before the
    /// point) come first, then the window as the dictionary. Call after `reset()`.
    func resume(bits: Int, byte: UInt8, window: [UInt8]) throws(ZlibError) {
        if bits > 0 {
            let rc = inflatePrime(stream, Int32(bits), Int32(byte >> (8 - bits)))
            guard rc == Z_OK else { throw ZlibError(rc, stream) }
        }
        if !window.isEmpty {
            let rc = window.withUnsafeBufferPointer {
                inflateSetDictionary(stream, $0.baseAddress, UInt32($0.count))
            }
            guard rc == Z_OK else { throw ZlibError(rc, stream) }
        }
    }

    /// Inflates from `input` into `output`. With `stopAtBlock` zlib returns at the end of
    /// every deflate block (then `atBlockBoundary` is true).
    func inflate(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutablePointer<UInt8>, capacity: Int,
        stopAtBlock: Bool
    ) -> Step {
        let inCount = UInt32(clamping: input.count)
        let outCount = UInt32(clamping: capacity)
        stream.pointee.next_in = UnsafeMutablePointer(
            mutating: (input.baseAddress ?? UnsafeRawPointer(output)).assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = inCount
        stream.pointee.next_out = output
        stream.pointee.avail_out = outCount
        let rc = CBlobStreamZlib.inflate(stream, stopAtBlock ? Z_BLOCK : Z_NO_FLUSH)
        let consumed = Int(inCount - stream.pointee.avail_in)
        let produced = Int(outCount - stream.pointee.avail_out)
        stream.pointee.next_in = nil
        stream.pointee.next_out = nil
        switch rc {
        case Z_OK, Z_BUF_ERROR:
            return Step(consumed: consumed, produced: produced, streamEnd: false, error: nil)
        case Z_STREAM_END:
            return Step(consumed: consumed, produced: produced, streamEnd: true, error: nil)
        case Z_NEED_DICT:
            return Step(
                consumed: consumed, produced: produced, streamEnd: false,
                error: ZlibError(code: rc, message: "a preset dictionary is required"))
        default:
            return Step(consumed: consumed, produced: produced, streamEnd: false, error: ZlibError(rc, stream))
        }
    }

    /// zlib stopped at the end of a deflate block that is not the last one of the stream.
    var atBlockBoundary: Bool {
        let type = stream.pointee.data_type
        return type & 128 != 0 && type & 64 == 0
    }

    /// How many bits of the last byte consumed zlib has not used yet (0...7).
    var unusedBits: Int { Int(stream.pointee.data_type & 7) }

    /// The last (up to) 32 KiB of output of this deflate stream, left-padded with zeros to
    /// exactly `windowSize` bytes (a stream never refers back past its own start).
    func window() -> [UInt8] {
        var window = [UInt8](repeating: 0, count: Self.windowSize)
        var length: UInt32 = 0
        window.withUnsafeMutableBufferPointer { _ = inflateGetDictionary(stream, $0.baseAddress, &length) }
        let have = Int(length)
        if have < Self.windowSize {
            // Move what zlib wrote at the front to the back.
            let bytes = Array(window[0..<have])
            window = [UInt8](repeating: 0, count: Self.windowSize - have) + bytes
        }
        return window
    }
}
