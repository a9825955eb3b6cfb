/// A reflected CRC's register arithmetic, for registers of 32 or 64 bits held in a `UInt64`
/// (the highest bit of the width is x^0): products and powers of x modulo the polynomial.
/// Not generic, so that it runs at full speed from any module.
@usableFromInline struct CRCField: Sendable {
    /// The register's width in bits: 32 or 64.
    @usableFromInline let width: Int
    /// The reflected polynomial.
    @usableFromInline let polynomial: UInt64

    @usableFromInline init(width: Int, polynomial: UInt64) {
        self.width = width
        self.polynomial = polynomial
    }

    /// The bit of x^0.
    private var top: UInt64 { 1 << UInt64(width - 1) }
    /// The register's bits.
    private var mask: UInt64 { width == 64 ? ~0 : (1 << UInt64(width)) - 1 }

    /// `a × b` modulo the polynomial.
    @usableFromInline func multiply(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var (a, b, product) = (a & mask, b & mask, UInt64(0))
        let (top, mask) = (self.top, self.mask)
        while a != 0 {
            if a & top != 0 { product ^= b }
            a = (a << 1) & mask
            b = b & 1 == 1 ? (b >> 1) ^ polynomial : b >> 1
        }
        return product
    }

    /// x^exponent modulo the polynomial, by squaring.
    @usableFromInline func power(ofXTo exponent: UInt64) -> UInt64 {
        var result = top // x^0
        var square = top >> 1 // x^1
        var exponent = exponent
        while exponent > 0 {
            if exponent & 1 == 1 { result = multiply(square, result) }
            square = multiply(square, square)
            exponent >>= 1
        }
        return result
    }
}

/// The table loop of `ReflectedCRC`: sixteen bytes a step, three lanes at once over a large
/// buffer (see `ReflectedCRC`).
@usableFromInline enum CRCLoop {
    /// Buffers at least this long are cut into three lanes (the join costs about 2 µs).
    static let lanesFrom = 4096

    /// The register after `bytes`, from the inverted register `register` (still inverted).
    @usableFromInline static func run(
        _ register: UInt64, _ bytes: UnsafeRawBufferPointer, _ tables: [UInt64], _ field: CRCField
    ) -> UInt64 {
        guard let base = bytes.baseAddress else { return register }
        return tables.withUnsafeBufferPointer { tables in
            let table = tables.baseAddress!
            var register = register
            var offset = 0
            if bytes.count >= lanesFrom {
                let lane = bytes.count / 3 / 16 * 16
                var (a, b, c) = (register, UInt64(0), UInt64(0))
                while offset < lane {
                    a = step(a, base + offset, table)
                    b = step(b, base + lane + offset, table)
                    c = step(c, base + 2 * lane + offset, table)
                    offset += 16
                }
                // The registers are linear: A then B is A times x^(8 × lane), plus B from 0.
                let shift = field.power(ofXTo: UInt64(lane) * 8)
                register = field.multiply(shift, field.multiply(shift, a) ^ b) ^ c
                offset = 3 * lane
            }
            while bytes.count - offset >= 16 {
                register = step(register, base + offset, table)
                offset += 16
            }
            while offset < bytes.count {
                let byte = UInt64(base.load(fromByteOffset: offset, as: UInt8.self))
                register = (register >> 8) ^ table[Int(truncatingIfNeeded: (register ^ byte) & 0xFF)]
                offset += 1
            }
            return register
        }
    }

    /// The register after the 16 bytes at `at`.
    @inline(__always) private static func step(
        _ register: UInt64, _ at: UnsafeRawPointer, _ table: UnsafePointer<UInt64>
    ) -> UInt64 {
        let x = UInt64(littleEndian: at.loadUnaligned(as: UInt64.self)) ^ register
        let y = UInt64(littleEndian: at.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        return eightBytes(x, table + 8 * 256) ^ eightBytes(y, table)
    }

    /// The lookups of the eight bytes of `word` (the first in memory first) in eight tables
    /// from `tables`: the first byte in the last table, whose entries are the furthest from
    /// the end.
    @inline(__always) private static func eightBytes(_ word: UInt64, _ tables: UnsafePointer<UInt64>) -> UInt64 {
        var result = tables[Int(truncatingIfNeeded: word >> 56)]
        for byte in 0..<7 {
            let index = Int(truncatingIfNeeded: (word >> UInt64(8 * byte)) & 0xFF)
            result ^= tables[(7 - byte) * 256 + index]
        }
        return result
    }
}
