import CBlobStreamZlib

/// The one place where this module calls zlib: the zlib engine of `GzipMemberInflating`, the
/// reference path and the fallback when ISA-L is missing. A gzip inflater (windowBits 15 + 16,
/// so zlib parses FEXTRA, FNAME, FCOMMENT, checks FHCRC, and checks every member's CRC-32
/// and ISIZE, answering `Z_DATA_ERROR` on a mismatch).
///
/// The `z_stream` lives at a stable heap address from `init` to `end()` (zlib keeps a
/// pointer back to it in its internal state). Not thread-safe: its owner serializes calls.
///
/// `package` access: `BlobStreamArchive` inflates the gzip layer of a `.tar.gz` with the
/// package's engines (libarchive's gzip filter checks no CRC-32).
package final class ZlibMemberInflater: GzipMemberInflating {

    /// What one call to `inflate` did.
    package typealias Step = InflateStep
    /// How one call to `inflate` ended.
    package typealias Result = InflateResult

    private var stream: UnsafeMutablePointer<z_stream>?

    /// Allocates and initializes the `z_stream`.
    package init() throws(ZlibError) {
        let stream = try ZlibInflateStream.make(windowBits: 15 + 16)
        self.stream = stream
    }

    deinit { end() }

    /// Frees zlib's state and the `z_stream`. Later calls fail with `Z_STREAM_ERROR`.
    package func end() {
        guard let stream else { return }
        ZlibInflateStream.free(stream)
        self.stream = nil
    }

    /// Gets ready for the next member (keeps the allocated window).
    package func reset() {
        guard let stream else { return }
        inflateReset(stream)
    }

    /// Inflates from `input` into `output` (at most `UInt32.max` of each per call).
    package func inflate(
        _ input: UnsafeRawPointer, count inputCount: Int,
        into output: UnsafeMutablePointer<UInt8>, capacity outputCount: Int
    ) -> Step {
        guard let stream else {
            return Step(
                consumed: 0, produced: 0,
                result: .failed(InflateFailure(ZlibError(code: Z_STREAM_ERROR, message: "inflater closed"))))
        }
        let inCount = UInt32(clamping: inputCount)
        let outCount = UInt32(clamping: outputCount)
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = inCount
        stream.pointee.next_out = output
        stream.pointee.avail_out = outCount
        let rc = CBlobStreamZlib.inflate(stream, Z_NO_FLUSH)
        let consumed = Int(inCount - stream.pointee.avail_in)
        let produced = Int(outCount - stream.pointee.avail_out)
        stream.pointee.next_in = nil
        stream.pointee.next_out = nil
        let result: Result
        switch rc {
        case Z_OK, Z_BUF_ERROR: result = .ok // Z_BUF_ERROR: no progress possible yet, not fatal
        case Z_STREAM_END: result = .memberEnd
        case Z_NEED_DICT:
            result = .failed(InflateFailure(ZlibError(code: rc, message: "a preset dictionary is required")))
        default: result = .failed(InflateFailure(ZlibError(rc, stream)))
        }
        return Step(consumed: consumed, produced: produced, result: result)
    }
}
