import BlobStreamChecksums
import BlobStreamTestSupport
import Foundation
import SharedTestHelpers
import Testing

/// `XXH64`, the hash zstd checks content with, against its reference vectors and against
/// the `zstd` tool's frame checksums.
@Suite("XXH64")
struct XXH64Tests {
    @Test("XXH64: the reference vectors, zstd --check's frame checksums, the same in any pieces")
    func xxh64() throws {
        func hash(_ bytes: [UInt8], seed: UInt64 = 0) -> UInt64 { bytes.withUnsafeBytes { XXH64.hash($0, seed: seed) } }
        #expect(hash([]) == 0xEF46_DB37_51D8_E999)
        #expect(hash(Array("a".utf8)) == 0xD24E_C4F1_A98C_6E5B)
        #expect(hash(Array("abc".utf8)) == 0x44BC_2CF5_AD77_0999)
        // zstd --check stores the low 32 bits of XXH64 (seed 0) of the content in a frame's
        // last 4 bytes: an oracle independent of this implementation.
        let content = [UInt8](TestBytes.random(300_000, seed: 77))
        for count in [1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 65, 100, 1000, 4097, 300_000] {
            let part = Data(content.prefix(count))
            let frame = try zstd(["--check", "-1"], part)
            let stored = frame.suffix(4).withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            #expect(UInt32(truncatingIfNeeded: hash(Array(part))) == stored, "\(count) bytes")
        }
        // In pieces of every size, seeded or not: what one call gives.
        var generator = SeededGenerator(seed: 5)
        for seed: UInt64 in [0, 1, 1 << 40] {
            let whole = hash(content, seed: seed)
            for _ in 0..<20 {
                var hasher = XXH64(seed: seed)
                var at = 0
                while at < content.count {
                    let n = min(
                        content.count - at,
                        Int.random(in: 0...(Bool.random(using: &generator) ? 40 : 70_000), using: &generator))
                    content[at..<at + n].withUnsafeBytes { hasher.update($0) }
                    at += n
                }
                #expect(hasher.digest() == whole, "seed \(seed)")
            }
        }
    }

}

/// A deterministic random number generator (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
