import Foundation
import Testing

@testable import BlobStreamAssets

@Suite("DeliveredHash")
struct DeliveredHashTests {
    static func digest(_ bytes: [UInt8], chunks: [Int]? = nil) -> UInt64 {
        var hash = DeliveredHash()
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            guard let chunks else { return hash.combine(base, raw.count) }
            var at = 0
            var i = 0
            while at < raw.count {
                let n = min(chunks[i % chunks.count], raw.count - at)
                hash.combine(base + at, n)
                at += n
                i += 1
            }
        }
        return hash.digest()
    }

    /// Bytes (i·31 + 7) mod 251, the input of the reference values below.
    static let pattern = (0..<1_000).map { UInt8(($0 * 31 + 7) % 251) }

    @Test("XXH64 of known inputs: the values of the reference implementation (libxxhash XXH64, seed 0)")
    func referenceValues() {
        #expect(Self.digest([]) == 0xEF46_DB37_51D8_E999)
        #expect(Self.digest(Array("a".utf8)) == 0xD24E_C4F1_A98C_6E5B)
        #expect(Self.digest(Array("abc".utf8)) == 0x44BC_2CF5_AD77_0999)
        #expect(Self.digest(Array("Nobody inspects the spammish repetition".utf8)) == 0xFBCE_A83C_8A37_8BF1)
        let expected: [(Int, UInt64)] = [
            (31, 0x3391_303D_485E_846E), (32, 0x40B7_AFF7_5D45_BBC8), (33, 0x4997_CAE4_951C_17A5),
            (63, 0x2944_B4DA_FC69_B206), (64, 0xBB76_F6EF_19BD_5A1B), (100, 0xF0B2_9A91_5621_716D),
            (1_000, 0x9E33_00C1_CDE3_C58D),
        ]
        for (n, value) in expected {
            #expect(Self.digest(Array(Self.pattern.prefix(n))) == value, "\(n) bytes")
        }
    }

    @Test(
        "the digest does not depend on how the bytes were cut into combine calls",
        arguments: [[1], [3, 29], [31, 1, 64], [7, 100, 33, 4_096], [32], [65_536]])
    func chunking(chunks: [Int]) {
        let bytes = [UInt8](sampleBytes(10_007))
        #expect(Self.digest(bytes, chunks: chunks) == Self.digest(bytes))
        #expect(Self.digest(Array(Self.pattern), chunks: chunks) == 0x9E33_00C1_CDE3_C58D)
    }

    @Test("one flipped bit anywhere changes the digest")
    func flips() {
        let bytes = [UInt8](sampleBytes(300))
        let base = Self.digest(bytes)
        for i in 0..<bytes.count {
            for bit in [0, 7] {
                var other = bytes
                other[i] ^= UInt8(1 << bit)
                #expect(Self.digest(other) != base, "byte \(i) bit \(bit)")
            }
        }
    }
}
