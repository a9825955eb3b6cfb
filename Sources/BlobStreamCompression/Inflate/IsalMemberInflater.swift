import CBlobStreamIsal

/// The ISA-L engine of `GzipMemberInflating`: the header is read by `GzipHeaderParser` (zlib's
/// checks), the deflate data and the trailer by ISA-L's `isal_inflate` in
/// `ISAL_GZIP_NO_HDR_VER` mode (it checks the CRC-32 and ISIZE and consumes no byte past
/// the trailer). ISA-L is loaded at run time (`IsalAvailability`); the C calls are in the
/// `CBlobStreamIsal` target.
///
/// Not thread-safe: its owner serializes calls.
final class IsalMemberInflater: GzipMemberInflating {
    private var state: OpaquePointer?
    private var header = GzipHeaderParser()
    private var inHeader = true
    /// The last 8 input bytes ISA-L consumed: on a checksum failure they are the trailer,
    /// which tells a bad CRC-32 from a bad ISIZE (ISA-L reports both as one code).
    private var recent = (UInt64(0), 0)

    /// Makes an inflater; throws `IsalError` when ISA-L could not be loaded or started.
    init() throws(IsalError) {
        guard let state = bs_isal_inflater_create() else {
            let reason = bs_isal_unavailable_reason().map { String(cString: $0) } ?? "out of memory"
            throw IsalError(code: -9, message: reason)
        }
        self.state = state
    }

    deinit { end() }

    func end() {
        bs_isal_inflater_destroy(state)
        state = nil
    }

    func reset() {
        guard let state else { return }
        bs_isal_inflater_reset(state)
        header.reset()
        inHeader = true
        recent = (0, 0)
    }

    func inflate(
        _ input: UnsafeRawPointer, count inputCount: Int,
        into output: UnsafeMutablePointer<UInt8>, capacity outputCount: Int
    ) -> InflateStep {
        guard let state else { return Self.failure(0, IsalError(code: -9, message: "inflater closed")) }
        var consumed = 0
        if inHeader {
            let outcome = header.parse(UnsafeRawBufferPointer(start: input, count: inputCount), consumed: &consumed)
            switch outcome {
            case .needMore: return InflateStep(consumed: consumed, produced: 0, result: .ok)
            case .invalid(let code, let message): return Self.failure(consumed, IsalError(code: code, message: message))
            case .done: inHeader = false
            }
        }
        let inCount = UInt32(clamping: inputCount - consumed)
        let step = bs_isal_inflate(
            state, input.assumingMemoryBound(to: UInt8.self) + consumed, inCount, output,
            UInt32(clamping: outputCount))
        remember(input + consumed, Int(step.consumed))
        consumed += Int(step.consumed)
        let produced = Int(step.produced)
        switch step.status {
        case 0: return InflateStep(consumed: consumed, produced: produced, result: .ok)
        case 1: return InflateStep(consumed: consumed, produced: produced, result: .memberEnd)
        default:
            var step = Self.failure(consumed, error(step))
            step.produced = produced
            return step
        }
    }

    /// Keeps the last 8 bytes consumed (little-endian in `recent.0`, `recent.1` of them).
    private func remember(_ bytes: UnsafeRawPointer, _ count: Int) {
        guard count > 0 else { return }
        let take = min(8, count)
        var value = recent.0
        for i in (count - take)..<count {
            value = (value >> 8) | (UInt64(bytes.load(fromByteOffset: i, as: UInt8.self)) << 56)
        }
        recent = (value, min(8, recent.1 + take))
    }

    private func error(_ step: bs_isal_step) -> IsalError {
        switch step.status {
        case -1: return IsalError(code: -1, message: "invalid block")
        case -2: return IsalError(code: -2, message: "invalid code")
        case -3: return IsalError(code: -3, message: "invalid distance too far back")
        case -6:
            // The trailer: CRC-32 then ISIZE, little-endian; zlib checks the CRC first.
            guard recent.1 == 8 else { return IsalError(code: -6, message: "incorrect data check") }
            if UInt32(truncatingIfNeeded: recent.0) != step.crc {
                return IsalError(code: -6, message: "incorrect data check")
            }
            return IsalError(code: -6, message: "incorrect length check")
        default: return IsalError(code: step.status, message: "ISA-L error \(step.status)")
        }
    }

    private static func failure(_ consumed: Int, _ error: IsalError) -> InflateStep {
        InflateStep(consumed: consumed, produced: 0, result: .failed(InflateFailure(error)))
    }
}
