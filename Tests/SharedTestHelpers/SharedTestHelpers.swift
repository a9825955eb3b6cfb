import Crypto
import Foundation

// What several test targets need alike (not shipped: `BlobStreamTestSupport` is the product
// for source authors and has no dependency on swift-crypto).

/// The SHA-256 of `data` as 64 lowercase hexadecimal digits, as `sha256sum` prints it.
public func sha256(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

/// Deterministic bytes for tests, the same on every run and machine.
public enum TestBytes {
    /// `count` pseudo-random bytes from SplitMix64 seeded with `seed` (8 bytes per state).
    public static func random(_ count: Int, seed: UInt64) -> Data {
        var state = seed
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBufferPointer { raw in
            var z: UInt64 = 0
            for i in 0..<count {
                if i % 8 == 0 {
                    state &+= 0x9E37_79B9_7F4A_7C15
                    z = state
                    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                    z ^= z >> 31
                }
                raw[i] = UInt8(truncatingIfNeeded: z >> ((i % 8) * 8))
            }
        }
        return Data(bytes)
    }

    /// `count` bytes of text-like, compressible words picked from `words` by `random(_:seed:)`,
    /// separated by spaces, with a newline after every `lineEvery` words.
    public static func text(_ count: Int, seed: UInt64, words: [String], lineEvery: Int) -> Data {
        let noise = random(max(count / 2, 16), seed: seed)
        var out = Data()
        var i = 0
        while out.count < count {
            out.append(contentsOf: words[Int(noise[i % noise.count]) % words.count].utf8)
            out.append(i % lineEvery == lineEvery - 1 ? 0x0A : 0x20)
            i += 1
        }
        return out.prefix(count)
    }
}
