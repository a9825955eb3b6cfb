import BlobStream
import CBlobStreamIsal

/// Inflates one raw deflate stream (no header, no trailer), as a zip member's compressed
/// bytes are, with ISA-L (`ISAL_DEFLATE`) or zlib (windowBits −15). It checks nothing but
/// the deflate data itself: the caller checks the output's size and CRC-32.
///
/// Hand it exactly the stream's bytes: ISA-L may take up to 8 bytes past the stream's end
/// into its state (they are reported as consumed).
///
/// Not thread-safe: its owner serializes calls. `package` access: `BlobStreamArchive`
/// reads zip members through it.
package final class RawDeflateDecoder {
    /// What one call to `inflate` did.
    package struct Step {
        /// Input bytes the engine took (it may hold some of them internally).
        package var consumed: Int
        /// Output bytes it wrote.
        package var produced: Int
        /// The deflate stream ended (its last block was decoded and written out).
        package var ended: Bool
        /// The engine refused the data.
        package var failure: InflateFailure?
    }

    /// The engine in use: `.isal` or `.zlib`.
    package let engine: InflateEngine
    private let zlib: RawInflater?
    private var isal: OpaquePointer?
    private var isalEnded = false

    /// Makes a decoder with `engine` (`.automatic`: ISA-L when it can be loaded); `.isal`
    /// where ISA-L is unavailable fails with `.unsupported`. `name` names the source in
    /// messages.
    package init(engine: InflateEngine, name: String) throws(BlobStreamError) {
        let isalAvailability = IsalAvailability.system
        let resolved = engine.resolved(with: isalAvailability)
        self.engine = resolved
        if resolved == .isal {
            if let reason = isalAvailability.unavailableReason {
                throw BlobStreamError(
                    .unsupported, "\(name): the ISA-L inflate engine was asked for but is unavailable: \(reason)")
            }
            guard let state = bs_isal_raw_inflater_create() else {
                throw BlobStreamError(.sourceFailed, "\(name): cannot start ISA-L's inflate (out of memory)")
            }
            isal = state
            zlib = nil
        } else {
            do {
                zlib = try RawInflater()
            } catch {
                throw BlobStreamError(.sourceFailed, "\(name): cannot initialize zlib", cause: error)
            }
        }
    }

    deinit { bs_isal_inflater_destroy(isal) }

    /// Gets ready for a new deflate stream.
    package func reset() {
        if let isal {
            bs_isal_inflater_reset(isal)
            isalEnded = false
        } else {
            try? zlib?.reset() // inflateReset fails only on a broken z_stream, which this never has
        }
    }

    /// Inflates from `input` into `output` (at most `UInt32.max` of each per call). A call
    /// that consumes and produces nothing and does not end needs more input.
    package func inflate(_ input: UnsafeRawBufferPointer, into output: UnsafeMutablePointer<UInt8>, capacity: Int)
        -> Step
    {
        if let isal {
            if isalEnded { return Step(consumed: 0, produced: 0, ended: true, failure: nil) }
            let step = bs_isal_inflate(
                isal, input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt32(clamping: input.count), output,
                UInt32(clamping: capacity))
            var result = Step(consumed: Int(step.consumed), produced: Int(step.produced), ended: false, failure: nil)
            switch step.status {
            case 0: break
            case 1:
                result.ended = true
                isalEnded = true
            case -1: result.failure = InflateFailure(IsalError(code: -1, message: "invalid block"))
            case -2: result.failure = InflateFailure(IsalError(code: -2, message: "invalid code"))
            case -3: result.failure = InflateFailure(IsalError(code: -3, message: "invalid distance too far back"))
            default:
                result.failure = InflateFailure(IsalError(code: step.status, message: "ISA-L error \(step.status)"))
            }
            return result
        }
        let step = zlib!.inflate(input, into: output, capacity: capacity, stopAtBlock: false)
        return Step(
            consumed: step.consumed, produced: step.produced, ended: step.streamEnd,
            failure: step.error.map { InflateFailure($0) })
    }
}
