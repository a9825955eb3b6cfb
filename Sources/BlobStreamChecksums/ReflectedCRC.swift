/// The arithmetic the table-driven CRCs share (CRC-32, CRC-32C, CRC-64/NVME): reflected CRCs whose
/// register starts and ends inverted, as zlib's CRC-32 does, computed sixteen bytes at a time
/// ("slicing-by-16": sixteen tables of 256 entries, one lookup per byte, no dependency between
/// the lookups of one step; about 1.4 GB/s of one core here, where slicing-by-8 gave 1.2).
/// One loop, on a 64-bit register, serves both widths: it is not generic, since a generic
/// loop that a caller in another module did not specialize ran at 115 MB/s.
package struct ReflectedCRC<Value: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable {
    /// The reflected polynomial.
    @usableFromInline let polynomial: Value
    /// Sixteen tables of 256 entries, one after another: entry `k * 256 + b` is the CRC
    /// register after byte `b` followed by `k` zero bytes; a 32-bit register's entries
    /// zero-extended, so that one loop on a 64-bit register serves both widths.
    @usableFromInline let tables: [UInt64]

    package init(polynomial: Value) {
        self.polynomial = polynomial
        var tables = [Value](repeating: 0, count: 16 * 256)
        for byte in 0..<256 {
            var crc = Value(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            tables[byte] = crc
        }
        for k in 1..<16 {
            for byte in 0..<256 {
                let previous = tables[(k - 1) * 256 + byte]
                tables[k * 256 + byte] = (previous >> 8) ^ tables[Int(truncatingIfNeeded: previous & 0xFF)]
            }
        }
        self.tables = tables.map { UInt64(truncatingIfNeeded: $0) }
    }

    /// The CRC of `bytes` continued from `crc` (0 to start).
    @inlinable package func update(_ crc: Value, _ bytes: UnsafeRawBufferPointer) -> Value {
        guard bytes.count > 0 else { return crc }
        // The register, inverted, zero-extended: the loop is not generic (a generic one, not
        // specialized across modules, ran at 115 MB/s).
        let register = Self.run(UInt64(truncatingIfNeeded: ~crc), bytes, tables)
        return ~Value(truncatingIfNeeded: register)
    }

    /// The slicing-by-16 loop over `bytes` from the inverted register `register`; returns the
    /// register after them (still inverted).
    @usableFromInline static func run(_ register: UInt64, _ bytes: UnsafeRawBufferPointer, _ tables: [UInt64])
        -> UInt64
    {
        guard let base = bytes.baseAddress else { return register }
        return tables.withUnsafeBufferPointer { tables in
            let table = tables.baseAddress!
            var register = register
            var offset = 0
            let count = bytes.count
            while count - offset >= 16 {
                let x = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) ^ register
                let y = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
                var a = table[15 * 256 + Int(truncatingIfNeeded: x & 0xFF)]
                a ^= table[14 * 256 + Int(truncatingIfNeeded: (x >> 8) & 0xFF)]
                a ^= table[13 * 256 + Int(truncatingIfNeeded: (x >> 16) & 0xFF)]
                a ^= table[12 * 256 + Int(truncatingIfNeeded: (x >> 24) & 0xFF)]
                a ^= table[11 * 256 + Int(truncatingIfNeeded: (x >> 32) & 0xFF)]
                a ^= table[10 * 256 + Int(truncatingIfNeeded: (x >> 40) & 0xFF)]
                a ^= table[9 * 256 + Int(truncatingIfNeeded: (x >> 48) & 0xFF)]
                a ^= table[8 * 256 + Int(truncatingIfNeeded: x >> 56)]
                var b = table[7 * 256 + Int(truncatingIfNeeded: y & 0xFF)]
                b ^= table[6 * 256 + Int(truncatingIfNeeded: (y >> 8) & 0xFF)]
                b ^= table[5 * 256 + Int(truncatingIfNeeded: (y >> 16) & 0xFF)]
                b ^= table[4 * 256 + Int(truncatingIfNeeded: (y >> 24) & 0xFF)]
                b ^= table[3 * 256 + Int(truncatingIfNeeded: (y >> 32) & 0xFF)]
                b ^= table[2 * 256 + Int(truncatingIfNeeded: (y >> 40) & 0xFF)]
                b ^= table[1 * 256 + Int(truncatingIfNeeded: (y >> 48) & 0xFF)]
                b ^= table[Int(truncatingIfNeeded: y >> 56)]
                register = a ^ b
                offset += 16
            }
            while offset < count {
                let byte = UInt64(base.load(fromByteOffset: offset, as: UInt8.self))
                register = (register >> 8) ^ table[Int(truncatingIfNeeded: (register ^ byte) & 0xFF)]
                offset += 1
            }
            return register
        }
    }

    /// The CRC of A followed by B, from A's, B's and B's length (zlib's `crc32_combine`
    /// method: A's CRC times x^(8 × length of B), modulo the polynomial, plus B's).
    @inlinable package func combine(_ a: Value, _ b: Value, _ lengthB: Int) -> Value {
        guard lengthB > 0 else { return a }
        return multiply(power(ofXTo: UInt64(lengthB) * 8), a) ^ b
    }

    /// `a × b` modulo the polynomial, in the reflected bit order (the highest bit is x^0).
    @usableFromInline func multiply(_ a: Value, _ b: Value) -> Value {
        var a = a
        var b = b
        var product: Value = 0
        while a != 0 {
            if a & (1 << (Value.bitWidth - 1)) != 0 { product ^= b }
            a <<= 1
            b = b & 1 == 1 ? (b >> 1) ^ polynomial : b >> 1
        }
        return product
    }

    /// x^exponent modulo the polynomial, by squaring.
    @usableFromInline func power(ofXTo exponent: UInt64) -> Value {
        var result: Value = 1 << (Value.bitWidth - 1) // x^0
        var square: Value = 1 << (Value.bitWidth - 2) // x^1
        var exponent = exponent
        while exponent > 0 {
            if exponent & 1 == 1 { result = multiply(square, result) }
            square = multiply(square, square)
            exponent >>= 1
        }
        return result
    }
}

/// A named CRC (`CRC32`, `CRC32C`, `CRC64NVME`): its calls, over the one engine its type
/// holds. They are inlinable, so every caller runs the loop specialized for the register's
/// width, whichever module it is in.
package protocol ReflectedCRCFunction {
    /// The register: `UInt32` or `UInt64`.
    associatedtype Value: FixedWidthInteger & UnsignedInteger & Sendable
    /// The tables of the polynomial.
    static var engine: ReflectedCRC<Value> { get }
}

extension ReflectedCRCFunction {
    /// The CRC of `bytes` continued from `crc` (0 to start).
    @inlinable package static func update(_ crc: Value, _ bytes: UnsafeRawBufferPointer) -> Value {
        engine.update(crc, bytes)
    }

    /// The CRC of `bytes` continued from `crc` (0 to start).
    @inlinable package static func update(_ crc: Value, _ bytes: [UInt8]) -> Value {
        bytes.withUnsafeBytes { update(crc, $0) }
    }

    /// The CRC of A followed by B, from A's, B's and B's length.
    @inlinable package static func combine(_ a: Value, _ b: Value, _ lengthB: Int) -> Value {
        engine.combine(a, b, lengthB)
    }
}
