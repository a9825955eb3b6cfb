/// XXH64 (xxHash, 64 bits; Yann Collet's published algorithm), streaming: the hash an
/// `AssetDataSource` keeps of the bytes it handed out, to compare them with the same range
/// of the version it resumes in after an invalidation.
///
/// Why this hash: it detects changes, it does not authenticate. XXH64 is a published,
/// well-tested non-cryptographic hash (clean in SMHasher), so two different byte ranges of
/// the same length have the same digest with a probability of about 2⁻⁶⁴ unless someone
/// crafts them; someone who can rewrite the asset can write any bytes anyway. It runs four
/// independent lanes of 8 bytes: about 45 ms of CPU per GiB (as fast as the reference C
/// implementation on the same machine), where SHA-256 with the CPU's SHA instructions
/// (OpenSSL) took about 530 ms per GiB and would add a dependency to the module. The
/// digest does not depend on how the bytes were split into `combine` calls (checked by
/// the tests), which the comparison needs: the reads that delivered the bytes and the
/// block reads that re-read them are cut differently.
struct DeliveredHash {
    private static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    private let seed: UInt64
    private var v1, v2, v3, v4: UInt64
    private var total: UInt64 = 0
    /// Up to 31 bytes that do not fill a 32-byte stripe yet.
    private var pending: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var pendingCount = 0

    init(seed: UInt64 = 0) {
        self.seed = seed
        v1 = seed &+ Self.p1 &+ Self.p2
        v2 = seed &+ Self.p2
        v3 = seed
        v4 = seed &- Self.p1
    }

    @inline(__always)
    private static func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
        let a = acc &+ input &* p2
        return ((a << 31) | (a >> 33)) &* p1
    }

    @inline(__always)
    private static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { (x << r) | (x >> (64 - r)) }

    @inline(__always)
    private static func mergeRound(_ acc: UInt64, _ value: UInt64) -> UInt64 {
        ((acc ^ round(0, value)) &* p1) &+ p4
    }

    /// Adds `count` bytes at `bytes`.
    @inline(__always)
    mutating func combine(_ bytes: UnsafeRawPointer, _ count: Int) {
        guard count > 0 else { return }
        total &+= UInt64(count)
        var p = bytes
        var n = count
        if pendingCount > 0 {
            let take = min(32 - pendingCount, n)
            let at = pendingCount
            withUnsafeMutableBytes(of: &pending) { ($0.baseAddress! + at).copyMemory(from: p, byteCount: take) }
            pendingCount += take
            p += take
            n -= take
            if pendingCount < 32 { return }
            var a = v1
            var b = v2
            var c = v3
            var d = v4
            withUnsafeBytes(of: &pending) { Self.stripes(&a, &b, &c, &d, from: $0.baseAddress!, count: 1) }
            v1 = a
            v2 = b
            v3 = c
            v4 = d
            pendingCount = 0
        }
        if n >= 32 {
            var a = v1
            var b = v2
            var c = v3
            var d = v4
            Self.stripes(&a, &b, &c, &d, from: p, count: n / 32)
            v1 = a
            v2 = b
            v3 = c
            v4 = d
            p += n - n % 32
            n %= 32
        }
        if n > 0 {
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress!.copyMemory(from: p, byteCount: n) }
            pendingCount = n
        }
    }

    @inline(__always)
    private static func stripes(
        _ a: inout UInt64, _ b: inout UInt64, _ c: inout UInt64, _ d: inout UInt64,
        from p: UnsafeRawPointer, count: Int
    ) {
        var q = p
        for _ in 0..<count {
            a = round(a, UInt64(littleEndian: q.loadUnaligned(as: UInt64.self)))
            b = round(b, UInt64(littleEndian: q.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            c = round(c, UInt64(littleEndian: q.loadUnaligned(fromByteOffset: 16, as: UInt64.self)))
            d = round(d, UInt64(littleEndian: q.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
            q += 32
        }
    }

    /// The digest of everything combined so far (the state is left as it is).
    func digest() -> UInt64 {
        var h: UInt64
        if total >= 32 {
            h = Self.rotl(v1, 1) &+ Self.rotl(v2, 7) &+ Self.rotl(v3, 12) &+ Self.rotl(v4, 18)
            h = Self.mergeRound(h, v1)
            h = Self.mergeRound(h, v2)
            h = Self.mergeRound(h, v3)
            h = Self.mergeRound(h, v4)
        } else {
            h = seed &+ Self.p5
        }
        h &+= total
        var stripe = pending
        let n = pendingCount
        withUnsafeBytes(of: &stripe) { raw in
            var i = 0
            while i + 8 <= n {
                h ^= Self.round(0, UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
                h = Self.rotl(h, 27) &* Self.p1 &+ Self.p4
                i += 8
            }
            if i + 4 <= n {
                h ^= UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt32.self))) &* Self.p1
                h = Self.rotl(h, 23) &* Self.p2 &+ Self.p3
                i += 4
            }
            while i < n {
                h ^= UInt64(raw[i]) &* Self.p5
                h = Self.rotl(h, 11) &* Self.p1
                i += 1
            }
        }
        h ^= h >> 33
        h = h &* Self.p2
        h ^= h >> 29
        h = h &* Self.p3
        h ^= h >> 32
        return h
    }
}
