import BlobStream

/// Where members start in the uncompressed tar archives this process has read, so that
/// locating another member of the same archive jumps to it (or to where the last search
/// stopped) instead of reading every header before it again. `blobstream cat A!/x A!/y A!/z`
/// then reads the headers of A once, as `bsdtar -xOf A x y z` does.
///
/// An archive is known by its upstream's `.blobContentIdentityKey` (files answer it: device,
/// inode, size, change times), so a changed file is a new archive. What an index holds is
/// only a hint: the header found at a remembered position must carry the expected name, or
/// the index is dropped and the search starts again from the start of the archive.
///
/// One `Snapshot` covers a prefix of an archive: every header from the start up to and
/// including the one at `last`. For each name in that prefix (by a 64-bit hash of its
/// normalized bytes) it holds the position of its FIRST header, so that a jump reads the
/// same entry a search from the start would. A name not in a snapshot is not in the prefix:
/// the search resumes at `last`.
enum TarHeaderCache {
    /// What a search learned about one archive.
    struct Snapshot: Sendable {
        /// Name hash → upstream offset of the first header with that name.
        var positions: [UInt64: Int64] = [:]
        /// Upstream offset of the last header covered, and its name's hash.
        var last: Int64 = 0
        var lastHash: UInt64 = 0

        /// Records a header met while searching on from the end of this snapshot.
        mutating func record(_ hash: UInt64, at position: Int64) {
            if positions[hash] == nil { positions[hash] = position }
            last = position
            lastHash = hash
        }
    }

    /// Where a search starts.
    enum Plan {
        /// At the start of the archive, recording every header.
        case scan
        /// At the member's own header (its name's hash is known there).
        case jump(Int64)
        /// At the last header the snapshot covers (checked by its hash), recording on.
        case resume(Snapshot)
    }

    /// At most this many archives are remembered (the least recently stored is forgotten).
    static let capacity = 8

    private static let cache = Locked<[(identity: String, snapshot: Snapshot)]>([])

    /// How to search `identity`'s archive for the member whose normalized name hashes to
    /// `hash`.
    static func plan(identity: String, hash: UInt64) -> Plan {
        cache.withLock { entries in
            guard let snapshot = entries.first(where: { $0.identity == identity })?.snapshot else { return .scan }
            if let position = snapshot.positions[hash] { return .jump(position) }
            return .resume(snapshot)
        }
    }

    /// Stores what a search learned; a snapshot that covers less than the one stored is
    /// ignored (both are true: the larger one knows more).
    static func store(_ snapshot: Snapshot, identity: String) {
        cache.withLock { entries in
            if let i = entries.firstIndex(where: { $0.identity == identity }) {
                if entries[i].snapshot.last >= snapshot.last { return }
                entries.remove(at: i)
            }
            entries.append((identity, snapshot))
            if entries.count > capacity { entries.removeFirst() }
        }
    }

    /// Forgets `identity`'s archive (a remembered position did not hold the expected name).
    static func forget(identity: String) {
        cache.withLock { entries in entries.removeAll { $0.identity == identity } }
    }

    /// The standard library's hash of the bytes (seeded per process, which is all an
    /// in-process index needs).
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }
}
