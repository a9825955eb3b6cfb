import BlobStreamChecksums

/// XXH64 (xxHash, 64 bits; Yann Collet's published algorithm; the checksums module's `XXH64`),
/// streaming: the hash an
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
    private var hasher: XXH64

    init(seed: UInt64 = 0) { hasher = XXH64(seed: seed) }

    /// Adds `count` bytes at `bytes`.
    mutating func combine(_ bytes: UnsafeRawPointer, _ count: Int) {
        guard count > 0 else { return }
        hasher.update(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// The digest of everything combined so far (the state is left as it is).
    func digest() -> UInt64 { hasher.digest() }
}
