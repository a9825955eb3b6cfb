import BlobStreamChecksums
import BlobStreamTestSupport
import Foundation
import Testing

/// The CRC of `bytes` one bit at a time: the definition, with none of the engine's tables,
/// lanes or combining. A reflected CRC whose register starts and ends inverted.
private func bitwiseCRC(_ bytes: [UInt8], polynomial: UInt64, width: Int) -> UInt64 {
    let mask: UInt64 = width == 64 ? ~0 : (1 << UInt64(width)) - 1
    var register = mask
    for byte in bytes {
        register ^= UInt64(byte)
        for _ in 0..<8 { register = register & 1 == 1 ? (register >> 1) ^ polynomial : register >> 1 }
    }
    return ~register & mask
}

/// A deterministic random number generator (SplitMix64).
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// CRC-32, CRC-32C and CRC-64/NVME against published check values, against the bit-by-bit
/// definition at every length and alignment the engine's paths meet (a byte at a time, 16
/// bytes a step, three lanes), and `combine` against the whole CRC.
@Suite("CRC-32, CRC-32C, CRC-64/NVME: check values, the definition, combine")
struct CRCTests {
    static let check = Array("123456789".utf8)
    /// CRC-64/XZ: a 64-bit polynomial besides NVME's.
    static let xz = ReflectedCRC<UInt64>(polynomial: 0xC96C_5795_D787_0F42)

    @Test("the CRC catalogue's check values, and iSCSI's CRC-32C vectors (RFC 3720, B.4)")
    func publishedValues() {
        #expect(CRC32.update(0, Self.check) == 0xCBF4_3926)
        #expect(CRC32C.update(0, Self.check) == 0xE306_9283)
        #expect(CRC64NVME.update(0, Self.check) == 0xAE8B_1486_0A79_9888)
        #expect(CRC32C.update(0, [UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.update(0, [UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.update(0, (0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.update(0, (0..<32).reversed().map { UInt8($0) }) == 0x113F_DB5C)
        // The engine serves any reflected polynomial: CRC-64/XZ's check value.
        let xz = ReflectedCRC<UInt64>(polynomial: 0xC96C_5795_D787_0F42)
        #expect(Self.check.withUnsafeBytes { xz.update(0, $0) } == 0x995D_C9BB_DF19_39FA)
    }

    @Test(
        "every CRC equals the bit-by-bit definition at lengths about each path's edges, from three alignments",
        arguments: [
            0, 1, 15, 16, 17, 31, 48, 255, 256, 257, 319, 320, 383, 4095, 4096, 4097, 4143, 12_345, 100_003,
            1_048_637,
        ])
    func definition(count: Int) {
        let bytes = [UInt8](TestData.pseudoRandom(count + 2, seed: UInt64(count) + 1))
        for start in 0..<3 {
            let slice = Array(bytes[start..<start + count])
            #expect(UInt64(CRC32.update(0, slice)) == bitwiseCRC(slice, polynomial: 0xEDB8_8320, width: 32))
            #expect(UInt64(CRC32C.update(0, slice)) == bitwiseCRC(slice, polynomial: 0x82F6_3B78, width: 32))
            #expect(CRC64NVME.update(0, slice) == bitwiseCRC(slice, polynomial: 0x9A6C_9329_AC4B_C9B5, width: 64))
            // Another 64-bit polynomial folds with constants of its own (carry-less folding
            // from 256 bytes on where the CPU has it).
            #expect(
                slice.withUnsafeBytes { Self.xz.update(0, $0) }
                    == bitwiseCRC(slice, polynomial: 0xC96C_5795_D787_0F42, width: 64))
        }
    }

    @Test("combine joins the CRCs of random pieces into the whole's, and continuing gives the same")
    func combineRandomSplits() {
        let whole = [UInt8](TestData.pseudoRandom(70_000, seed: 42))
        let crc32 = CRC32.update(0, whole)
        let crc32c = CRC32C.update(0, whole)
        let crc64 = CRC64NVME.update(0, whole)
        var generator = SplitMix(state: 7)
        for round in 0..<40 {
            // Cuts at random places, some pieces empty, some of several lanes.
            let cuts = (0..<Int.random(in: 1...6, using: &generator)).map { _ in
                Int.random(in: 0...whole.count, using: &generator)
            }.sorted()
            let bounds = [0] + cuts + [whole.count]
            var (a, b, c) = (UInt32(0), UInt32(0), UInt64(0))
            var (ca, cb, cc) = (UInt32(0), UInt32(0), UInt64(0))
            for (from, to) in zip(bounds, bounds.dropFirst()) {
                let piece = Array(whole[from..<to])
                a = CRC32.combine(a, CRC32.update(0, piece), piece.count)
                b = CRC32C.combine(b, CRC32C.update(0, piece), piece.count)
                c = CRC64NVME.combine(c, CRC64NVME.update(0, piece), piece.count)
                ca = CRC32.update(ca, piece)
                cb = CRC32C.update(cb, piece)
                cc = CRC64NVME.update(cc, piece)
            }
            #expect(a == crc32 && ca == crc32, "round \(round), cuts \(cuts)")
            #expect(b == crc32c && cb == crc32c, "round \(round), cuts \(cuts)")
            #expect(c == crc64 && cc == crc64, "round \(round), cuts \(cuts)")
        }
    }

    @Test("combine with an empty second part is the first CRC; a changed byte changes every CRC")
    func combineEdgesAndSensitivity() {
        #expect(CRC32C.combine(0x1234_5678, 0, 0) == 0x1234_5678)
        #expect(CRC64NVME.combine(0xDEAD_BEEF, 0, 0) == 0xDEAD_BEEF)
        var bytes = [UInt8](TestData.pseudoRandom(9_000, seed: 9))
        let before = (CRC32.update(0, bytes), CRC32C.update(0, bytes), CRC64NVME.update(0, bytes))
        for at in [0, 4_500, 8_999] {
            bytes[at] ^= 0x01
            #expect(CRC32.update(0, bytes) != before.0, "byte \(at)")
            #expect(CRC32C.update(0, bytes) != before.1, "byte \(at)")
            #expect(CRC64NVME.update(0, bytes) != before.2, "byte \(at)")
            bytes[at] ^= 0x01
        }
        #expect(CRC32C.update(0, bytes) == before.1)
    }
}
