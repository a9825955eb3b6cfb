import BlobStream

// What an `ArchiveMemberDataSource` reads its member with, once it found it. It finds it
// one of four ways, each a type of its own that owns its state: through a member index
// (`IndexedMemberReader`), through a zip's central directory (`ZipDirectoryMemberReader`),
// by walking a tar's headers in place (`TarWalkMemberReader`, which hands to libarchive what
// it does not walk) or with libarchive (`LibArchiveMemberReader`). The first three read the
// member's bytes where they are (`MemberSliceReader`); libarchive reads its own blocks.

/// The reader of the member found: libarchive's blocks, or its bytes where they are.
enum MemberReader {
    /// libarchive's handle, at the member (`LibArchiveMemberReader`).
    case libarchive(LibArchiveMemberReader)
    /// The member's bytes in the upstream, stored or compressed (`MemberSliceReader`).
    case slice(MemberSliceReader)

    /// Member offset up to which bytes were taken (delivered or skipped).
    var produced: Int64 {
        switch self {
        case .libarchive(let reader): reader.produced
        case .slice(let reader): reader.produced
        }
    }

    /// Reads up to `capacity` (> 0) member bytes at `target` into `out`, moving `target`.
    func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int, target: inout Int64) -> MemberReadResult {
        switch self {
        case .libarchive(let reader): reader.read(into: out, capacity: capacity, target: &target)
        case .slice(let reader): reader.read(into: out, capacity: capacity, target: &target)
        }
    }

    /// An empty member, at its open: confirms its end now (a CRC, a truncation). True when
    /// it is at its end at `target`.
    func confirmEmpty(target: Int64) throws(BlobStreamError) -> Bool {
        switch self {
        case .libarchive(let reader): try reader.confirmEmpty(target: target)
        case .slice(let reader): try reader.confirmEmpty(target: target)
        }
    }

    /// What the member's checks vouch for before its end (see `verifiedPrefix`).
    var verifiedPrefix: BlobVerifiedPrefix {
        switch self {
        case .libarchive(let reader): reader.verifiedPrefix
        case .slice(let reader): reader.verifiedPrefix
        }
    }

    /// The source closed: frees libarchive's state, the decoders, the archive file.
    func close() {
        switch self {
        case .libarchive(let reader): reader.close()
        case .slice(let reader): reader.close()
        }
    }
}

/// What a reader's `read` did: `count` bytes delivered, then the member's end confirmed
/// with them (`atEnd`), or a problem met (reported with the next read when bytes went out
/// with this one, at once otherwise).
struct MemberReadResult {
    var count: Int
    var problem: BlobStreamError?
    var atEnd = false

    init(count: Int, atEnd: Bool = false) {
        self.count = count
        self.atEnd = atEnd
    }

    static func failed(_ problem: BlobStreamError, delivered: Int = 0) -> MemberReadResult {
        var result = MemberReadResult(count: delivered)
        result.problem = problem
        return result
    }
}
