/// Reads a gzip member's header (RFC 1952) byte by byte, with zlib's checks and zlib's
/// words, for the ISA-L engine (ISA-L 2.30 loses its place in a header split across calls,
/// so the engine hands ISA-L the deflate data only). Checks, in zlib's order and at the
/// same byte counts: the magic (after 2 bytes), the method and the reserved flag bits
/// (after 4 bytes), then skips MTIME,
/// XFL, OS, FEXTRA, FNAME, FCOMMENT, and checks FHCRC.
struct GzipHeaderParser {
    /// What `parse` found.
    enum Outcome: Equatable {
        /// The header needs more bytes.
        case needMore
        /// The header ended; the deflate data starts after the bytes consumed.
        case done
        /// The header is invalid: ISA-L's code for it and zlib's words.
        case invalid(code: Int32, message: String)
    }

    private enum Field {
        case fixed // the 10 fixed bytes
        case extraLength
        case extra
        case name
        case comment
        case headerCRC
        case done
    }

    private var field = Field.fixed
    /// Bytes read of the current field (fixed, extraLength, headerCRC).
    private var count = 0
    private var flags: UInt8 = 0
    private var extraLeft = 0
    private var pair: UInt16 = 0
    private var crc: UInt32 = 0

    /// Starts over for the next member.
    mutating func reset() { self = GzipHeaderParser() }

    /// Reads header bytes from `bytes`; `consumed` says how many it took.
    mutating func parse(_ bytes: UnsafeRawBufferPointer, consumed: inout Int) -> Outcome {
        var i = 0
        // Where the bytes of this call that the header CRC covers start (nil once FHCRC is
        // reached): they are added to `crc` when FHCRC is reached or the call returns.
        var covered: Int? = field == .headerCRC || field == .done ? nil : 0
        func addCovered() {
            if let from = covered, i > from, let base = bytes.baseAddress {
                crc = ZlibCRC32.update(crc, UnsafeRawBufferPointer(start: base + from, count: i - from))
            }
            covered = nil
        }
        defer {
            addCovered()
            consumed = i
        }
        while i < bytes.count && field != .done {
            let byte = bytes[i]
            switch field {
            case .fixed:
                i += 1
                count += 1
                // zlib reads the magic as one 16-bit value, then CM and FLG as another.
                switch count {
                case 1, 3: pair = UInt16(byte)
                case 2: if pair != 0x1F || byte != 0x8B { return Self.badMagic }
                case 4:
                    flags = byte
                    if pair != 8 { return .invalid(code: -5, message: "unknown compression method") }
                    if flags & 0xE0 != 0 { return .invalid(code: -4, message: "unknown header flags set") }
                case 10: next()
                default: break
                }
            case .extraLength:
                i += 1
                count += 1
                pair |= UInt16(byte) << (count == 1 ? 0 : 8)
                if count == 2 {
                    extraLeft = Int(pair)
                    field = .extra
                    if extraLeft == 0 { next() }
                }
            case .extra:
                let take = min(extraLeft, bytes.count - i)
                i += take
                extraLeft -= take
                if extraLeft == 0 { next() }
            case .name, .comment:
                i += 1
                if byte == 0 { next() }
            case .headerCRC:
                i += 1
                count += 1
                pair |= UInt16(byte) << (count == 1 ? 0 : 8)
                if count == 2 {
                    field = .done
                    if UInt16(truncatingIfNeeded: crc) != pair {
                        return .invalid(code: -6, message: "header crc mismatch")
                    }
                }
            case .done:
                break
            }
            if field == .headerCRC && covered != nil { addCovered() }
        }
        return field == .done ? .done : .needMore
    }

    /// Moves to the next field the flags call for.
    private mutating func next() {
        count = 0
        pair = 0
        switch field {
        case .fixed: field = .extraLength
        case .extraLength, .extra: field = .name
        case .name: field = .comment
        case .comment: field = .headerCRC
        case .headerCRC, .done: field = .done
        }
        // Skip the fields whose flag is not set.
        if field == .extraLength && flags & 0x04 == 0 { field = .name }
        if field == .name && flags & 0x08 == 0 { field = .comment }
        if field == .comment && flags & 0x10 == 0 { field = .headerCRC }
        if field == .headerCRC && flags & 0x02 == 0 { field = .done }
    }

    private static let badMagic = Outcome.invalid(code: -4, message: "incorrect header check")
}
