import BlobStream
import BlobStreamCompression
import Foundation

// A zip member compressed with deflate, read through an index without libarchive: exactly
// its compressed bytes are inflated (ISA-L raw when it can be loaded, zlib raw otherwise),
// and at its end the deflate stream must have ended with the member's size, and the output
// must have the CRC-32 the central directory gives. A mismatch is `.corrupt`, never an end.

/// Where a deflate member stands: the decoder, how far into the compressed bytes and into
/// the output it is, and the CRC-32 of the output so far. Moving backward starts again.
/// Not thread-safe: used under the source's lock.
final class MemberInflation {
    let decoder: RawDeflateDecoder
    /// The compressed bytes' length (their start is the slice's `start`).
    let compressedLength: Int64
    /// Compressed bytes taken by the decoder.
    var consumed: Int64 = 0
    /// Output bytes made (and hashed).
    var produced: Int64 = 0
    var crc: UInt32 = 0
    /// The deflate stream ended.
    var ended = false
    /// Where skipped output goes.
    let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 64 * 1024)
    static let scratchSize = 64 * 1024

    init(compressedLength: Int64, name: String, engine: InflateEngine = .automatic) throws(BlobStreamError) {
        self.compressedLength = compressedLength
        decoder = try RawDeflateDecoder(engine: engine, name: name)
    }

    deinit { scratch.deallocate() }

    /// Back to the first byte.
    func restart() {
        decoder.reset()
        consumed = 0
        produced = 0
        crc = 0
        ended = false
    }

    /// A problem met while inflating: its code, words and cause.
    struct Problem: Error {
        var code: BlobStreamError.Code
        var message: String
        var cause: (any Error)?
    }

    /// Inflates into `out` (up to `capacity`, > 0) from the compressed bytes at `start` in
    /// `reader`; returns the count, 0 only when the deflate stream ended.
    func step(_ reader: BlobUpstreamReader, start: Int64, into out: UnsafeMutablePointer<UInt8>, capacity: Int)
        throws(Problem) -> Int
    {
        while !ended {
            let position = start + consumed
            var input = UnsafeRawBufferPointer(start: nil, count: 0)
            if consumed < compressedLength {
                do {
                    try reader.seek(to: position)
                } catch {
                    throw Problem(
                        code: error.code, message: "the upstream refused to move to offset \(position)", cause: error)
                }
                switch reader.fill(atLeast: 1, waiting: true) {
                case .bytes(let bytes):
                    let n = Int(min(Int64(bytes.count), compressedLength - consumed))
                    input = UnsafeRawBufferPointer(rebasing: bytes[0..<n])
                case .end, .starved:
                    throw Problem(
                        code: .truncated,
                        message:
                            "the archive is truncated: it ends at offset \(position), inside the member's compressed bytes",
                        cause: nil)
                case .failed(let error):
                    throw Problem(
                        code: (error as? BlobStreamError)?.code ?? .ioFailed,
                        message: "the upstream failed at offset \(position)", cause: reader.source.error ?? error)
                }
            }
            let step = decoder.inflate(input, into: out, capacity: capacity)
            if step.consumed > 0 { reader.consume(min(step.consumed, input.count)) }
            consumed += Int64(step.consumed)
            if step.produced > 0 {
                crc = ZlibCRC32.update(crc, UnsafeRawBufferPointer(start: out, count: step.produced))
                produced += Int64(step.produced)
            }
            if let failure = step.failure {
                throw Problem(
                    code: .corrupt,
                    message:
                        "the member's deflate data (from offset \(start)) is damaged (\(failure.message)) after \(produced) bytes of output",
                    cause: failure.cause)
            }
            if step.ended { ended = true }
            if step.produced > 0 { return step.produced }
            if step.consumed == 0, !ended, input.isEmpty {
                throw Problem(
                    code: .corrupt,
                    message:
                        "the member's deflate data ends before its deflate stream does (\(compressedLength) compressed bytes gave \(produced) bytes)",
                    cause: nil)
            }
        }
        return 0
    }
}

extension MemberSliceReader {
    /// `read` for a deflate member (see `MemberInflation`): skips to `target` by inflating,
    /// then inflates into `out`; checks the end with the last bytes.
    func readDeflate(into out: UnsafeMutablePointer<UInt8>, capacity: Int, target: inout Int64) -> MemberReadResult {
        var s = slice
        guard let inflation = s.inflation else { return .failed(archive.naming.makeError(.closed, "closed")) }
        defer { slice = s }
        if target < inflation.produced { inflation.restart() }
        do throws(MemberInflation.Problem) {
            while inflation.produced < target {
                let wanted = Int(min(Int64(MemberInflation.scratchSize), target - inflation.produced))
                if try inflation.step(archive.reader, start: s.start, into: inflation.scratch, capacity: wanted) == 0 {
                    break
                }
            }
            if inflation.produced >= s.length {
                if let problem = try confirmDeflateEnd(&s, inflation) { return .failed(problem) }
                if target > s.length {
                    return .failed(
                        archive.naming.makeError(
                            .invalidOffset, "offset \(target) is past the end of the member (\(s.length) bytes)"))
                }
                return MemberReadResult(count: 0)
            }
            let wanted = Int(min(Int64(capacity), s.length - inflation.produced))
            let n = try inflation.step(archive.reader, start: s.start, into: out, capacity: wanted)
            target = inflation.produced
            produced = target
            if n == 0 || inflation.produced >= s.length {
                if let problem = try confirmDeflateEnd(&s, inflation) { return .failed(problem, delivered: n) }
                return MemberReadResult(count: n, atEnd: true)
            }
            return MemberReadResult(count: n)
        } catch {
            return .failed(archive.naming.makeError(error.code, error.message, cause: error.cause))
        }
    }

    /// At the member's end: the deflate stream ends there (no byte more), and the CRC-32
    /// matches. Nil when all is well (then the slice counts as checked).
    private func confirmDeflateEnd(_ s: inout MemberSlice, _ inflation: MemberInflation)
        throws(MemberInflation.Problem) -> BlobStreamError?
    {
        if inflation.produced < s.length {
            return archive.naming.makeError(
                .corrupt,
                "the member's deflate data holds \(inflation.produced) bytes; the archive says \(s.length)")
        }
        while !inflation.ended {
            if try inflation.step(archive.reader, start: s.start, into: inflation.scratch, capacity: 1) > 0 {
                return archive.naming.makeError(
                    .corrupt, "the member's deflate data holds more than the \(s.length) bytes the archive says")
            }
        }
        if let expected = s.expectedCRC, inflation.crc != expected {
            return archive.naming.makeError(
                .corrupt,
                "a CRC check failed on the member's bytes inflated from offset \(s.start) (CRC-32 \(String(format: "%08x", inflation.crc)), the archive says \(String(format: "%08x", expected)))"
            )
        }
        s.hashed = s.length
        return nil
    }
}
