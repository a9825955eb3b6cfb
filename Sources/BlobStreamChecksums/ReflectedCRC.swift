/// The arithmetic the table-driven CRCs share (CRC-32, CRC-32C, CRC-64/NVME): reflected CRCs whose
/// register starts and ends inverted, as zlib's CRC-32 does, computed eight bytes at a time
/// ("slicing-by-8": eight tables of 256 entries, one lookup per byte, no dependency between
/// the lookups of one step).
/// (Registers of 32 and 64 bits: one step consumes the whole register.)
package struct ReflectedCRC<Value: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable {
    /// The reflected polynomial.
    @usableFromInline let polynomial: Value
    /// Eight tables of 256 entries, one after another: entry `k * 256 + b` is the CRC
    /// register after byte `b` followed by `k` zero bytes.
    @usableFromInline let tables: [Value]

    package init(polynomial: Value) {
        self.polynomial = polynomial
        var tables = [Value](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = Value(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            tables[byte] = crc
        }
        for k in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(k - 1) * 256 + byte]
                tables[k * 256 + byte] = (previous >> 8) ^ tables[Int(truncatingIfNeeded: previous & 0xFF)]
            }
        }
        self.tables = tables
    }

    /// The CRC of `bytes` continued from `crc` (0 to start).
    @inlinable package func update(_ crc: Value, _ bytes: UnsafeRawBufferPointer) -> Value {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return tables.withUnsafeBufferPointer { table in
            var register = ~crc
            var offset = 0
            let count = bytes.count
            while count - offset >= 8 {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                let x = word ^ UInt64(truncatingIfNeeded: register)
                var next = table[7 * 256 + Int(truncatingIfNeeded: x & 0xFF)]
                next ^= table[6 * 256 + Int(truncatingIfNeeded: (x >> 8) & 0xFF)]
                next ^= table[5 * 256 + Int(truncatingIfNeeded: (x >> 16) & 0xFF)]
                next ^= table[4 * 256 + Int(truncatingIfNeeded: (x >> 24) & 0xFF)]
                next ^= table[3 * 256 + Int(truncatingIfNeeded: (x >> 32) & 0xFF)]
                next ^= table[2 * 256 + Int(truncatingIfNeeded: (x >> 40) & 0xFF)]
                next ^= table[1 * 256 + Int(truncatingIfNeeded: (x >> 48) & 0xFF)]
                next ^= table[Int(truncatingIfNeeded: x >> 56)]
                register = next
                offset += 8
            }
            while offset < count {
                let byte = base.load(fromByteOffset: offset, as: UInt8.self)
                register = (register >> 8) ^ table[Int(truncatingIfNeeded: (register ^ Value(byte)) & 0xFF)]
                offset += 1
            }
            return ~register
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
