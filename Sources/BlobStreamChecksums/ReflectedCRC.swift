/// The arithmetic the table-driven CRCs share (CRC-32, CRC-32C, CRC-64/NVME): reflected CRCs whose
/// register starts and ends inverted, as zlib's CRC-32 does.
///
/// - Sixteen bytes a step ("slicing-by-16": sixteen tables of 256 entries, one lookup per
///   byte, no dependency between the lookups of one step).
/// - Three lanes at once: a buffer of a few KiB or more is cut in three, each third's register
///   runs beside the others' (three dependency chains the core overlaps), and the three are
///   joined as `combine` joins CRCs (the register times x^(8 × a third's length)). About
///   3.9 GB/s of one core here, where one lane gave 1.65 and slicing-by-8 1.2.
/// - One loop, on a 64-bit register, serves both widths: it is not generic, since a generic
///   loop that a caller in another module did not specialize ran at 115 MB/s.
package struct ReflectedCRC<Value: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable {
    /// The reflected polynomial.
    @usableFromInline let polynomial: Value
    /// Sixteen tables of 256 entries, one after another: entry `k * 256 + b` is the CRC
    /// register after byte `b` followed by `k` zero bytes; a 32-bit register's entries
    /// zero-extended, so that one loop on a 64-bit register serves both widths.
    @usableFromInline let tables: [UInt64]
    /// The register's arithmetic, not generic: its width and polynomial.
    @usableFromInline let field: CRCField

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
        field = CRCField(width: Value.bitWidth, polynomial: UInt64(truncatingIfNeeded: polynomial))
    }

    /// The CRC of `bytes` continued from `crc` (0 to start).
    @inlinable package func update(_ crc: Value, _ bytes: UnsafeRawBufferPointer) -> Value {
        guard bytes.count > 0 else { return crc }
        // The register, inverted, zero-extended: the loop is not generic (a generic one, not
        // specialized across modules, ran at 115 MB/s).
        let register = CRCLoop.run(UInt64(truncatingIfNeeded: ~crc), bytes, tables, field)
        return ~Value(truncatingIfNeeded: register)
    }

    /// The CRC of A followed by B, from A's, B's and B's length (zlib's `crc32_combine`
    /// method: A's CRC times x^(8 × length of B), modulo the polynomial, plus B's).
    @inlinable package func combine(_ a: Value, _ b: Value, _ lengthB: Int) -> Value {
        guard lengthB > 0 else { return a }
        let shifted = field.multiply(field.power(ofXTo: UInt64(lengthB) * 8), UInt64(truncatingIfNeeded: a))
        return Value(truncatingIfNeeded: shifted) ^ b
    }
}

/// A named CRC (`CRC32`, `CRC32C`, `CRC64NVME`): its calls, over the one engine its type
/// holds.
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
