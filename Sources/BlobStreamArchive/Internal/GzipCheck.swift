import CBlobStreamZlib

/// Checks the gzip layer of an archive as its compressed bytes go by: libarchive (3.6) never
/// checks a gzip member's CRC-32 and ISIZE (its gzip filter leaves that as a to-do), so
/// garbled deflate data that still decodes, or a garbled stored block, would pass unseen.
///
/// `UpstreamInput` hands it every byte it gives libarchive, from offset 0 of the upstream.
/// When they start like a gzip member (`1f 8b 08`), a zlib inflater of its own (windowBits
/// 15 + 16: zlib checks each member's CRC-32 and ISIZE) decodes them into a scratch buffer
/// that is thrown away; members follow one another as libarchive reads them (another
/// `1f 8b 08` after a member's trailer starts the next; anything else ends the gzip
/// stream, as it ends libarchive's filter). Costs one more inflate of the archive.
///
/// Not thread-safe: its owner (the input, inside its owner's libarchive calls) serializes calls.
final class GzipCheck {
    private enum State {
        /// Looking at the first bytes, or at the bytes after a member: gzip or not?
        case probing
        case inflating
        /// The gzip stream ended (non-gzip bytes after a member): the rest is not looked at.
        case done
        /// The upstream does not start with a gzip member.
        case notGzip
        case failed(String)
        /// Bytes were not seen (the input moved): no conclusion.
        case abandoned
    }

    private static let scratchSize = 64 * 1024
    private static let magic: [UInt8] = [0x1F, 0x8B, 0x08]

    private var state = State.probing
    private var head: [UInt8] = []
    private var stream: UnsafeMutablePointer<z_stream>?
    private let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: scratchSize)
    /// Members whose CRC-32 and ISIZE matched.
    private(set) var membersChecked = 0

    deinit {
        endStream()
        scratch.deallocate()
    }

    /// Whether it is (still) checking a gzip stream: the input must not skip bytes.
    var isActive: Bool {
        switch state {
        case .probing, .inflating: true
        default: false
        }
    }

    /// The input moved without reading: no conclusion can be drawn any more.
    func abandon() {
        if case .probing = state, membersChecked == 0 {
            state = .notGzip  // libarchive's filters never move the input: not a gzip layer
        } else if isActive {
            state = .abandoned
            endStream()
        }
    }

    /// Looks at the next `count` bytes of the upstream.
    func feed(_ bytes: UnsafeRawPointer, count: Int) {
        var p = bytes.assumingMemoryBound(to: UInt8.self)
        var left = count
        while left > 0 {
            switch state {
            case .probing:
                // Collect up to three bytes (they may come in separate reads), then decide.
                let take = min(left, Self.magic.count - head.count)
                head.append(contentsOf: UnsafeBufferPointer(start: p, count: take))
                p += take
                left -= take
                guard head.count == Self.magic.count else { return }
                guard head == Self.magic else {
                    state = membersChecked == 0 ? .notGzip : .done
                    endStream()
                    return
                }
                guard startMember() else { return }
                let first = head
                head = []
                first.withUnsafeBytes { _ = inflate($0.baseAddress!, count: $0.count) }
            case .inflating:
                let used = inflate(UnsafeRawPointer(p), count: left)
                p += used
                left -= used
            case .done, .notGzip, .failed, .abandoned:
                return
            }
        }
    }

    /// The verdict once every byte was fed: nil when nothing is wrong (or there is no gzip
    /// layer), else what is wrong and whether it is a truncation.
    func verdict() -> (truncated: Bool, message: String)? {
        switch state {
        case .failed(let message): (false, message)
        case .inflating: (true, "the gzip stream ends inside a member, before its CRC-32 and size")
        case .abandoned: (false, "the gzip stream could not be checked: the archive was not read in one pass")
        default: nil
        }
    }

    /// Inflates from `bytes`; returns how many were consumed (all of them unless the member
    /// ended or the data is refused).
    @discardableResult
    private func inflate(_ bytes: UnsafeRawPointer, count: Int) -> Int {
        guard let stream else { return count }
        var consumed = 0
        while consumed < count {
            let inCount = UInt32(clamping: count - consumed)
            stream.pointee.next_in = UnsafeMutablePointer(mutating: (bytes + consumed).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = inCount
            stream.pointee.next_out = scratch
            stream.pointee.avail_out = UInt32(Self.scratchSize)
            let rc = CBlobStreamZlib.inflate(stream, Z_NO_FLUSH)
            consumed += Int(inCount - stream.pointee.avail_in)
            stream.pointee.next_in = nil
            stream.pointee.next_out = nil
            switch rc {
            case Z_OK, Z_BUF_ERROR:
                continue
            case Z_STREAM_END:
                membersChecked += 1
                state = .probing
                return consumed
            default:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(rc)"
                state = .failed("gzip member \(membersChecked + 1): \(message)")
                endStream()
                return count
            }
        }
        return consumed
    }

    private func startMember() -> Bool {
        if let stream {
            inflateReset(stream)
        } else {
            let fresh = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            fresh.initialize(to: z_stream())
            // `inflateInit2` is a macro that does not import; this is what it expands to.
            guard inflateInit2_(fresh, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
                fresh.deinitialize(count: 1)
                fresh.deallocate()
                state = .failed("zlib could not start to check the gzip stream")
                return false
            }
            stream = fresh
        }
        state = .inflating
        return true
    }

    private func endStream() {
        guard let stream else { return }
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        self.stream = nil
    }
}
