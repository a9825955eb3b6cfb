import BlobStream

/// How an `ArchiveMemberDataSource` found its member (`lookup`, once the source is open).
public enum ArchiveMemberLookup: Sendable, Equatable, CustomStringConvertible {
    /// Through a member index (`ArchiveIndex`: `ARCHIVE.blobidx` beside the archive, or
    /// one given): one lookup, then the member's bytes where they are.
    case memberIndex
    /// Through the zip's own central directory, over an upstream that can seek: no
    /// `.blobidx` needed; the member's bytes are read where they are (stored) or inflated
    /// (deflate), their size and CRC-32 checked.
    case zipCentralDirectory
    /// By walking an uncompressed tar's headers, seeking over the other members' bodies.
    case tarHeaderWalk
    /// By libarchive, reading the archive's headers in order.
    case libarchive

    /// What `blobstream cat --verbose` prints: `found through its member index`, …
    public var description: String {
        switch self {
        case .memberIndex: "found through its member index"
        case .zipCentralDirectory: "found through the zip's central directory"
        case .tarHeaderWalk: "found by walking the tar's headers"
        case .libarchive: "found by libarchive"
        }
    }
}

extension ArchiveMemberDataSource {
    /// How the member was found (see `ArchiveMemberLookup`); nil before the source is open
    /// and when it failed to find it.
    public var lookup: ArchiveMemberLookup? {
        lock.lock()
        defer { lock.unlock() }
        return found.lookup
    }

    /// Why a member index found beside the archive was not used (stale, damaged, made for
    /// another version of the object), once the source looked for one; nil when none was
    /// found or it was used. `blobstream cat --verbose` prints it.
    public var unusedIndexReason: String? {
        lock.lock()
        defer { lock.unlock() }
        return indexed.unusedReason
    }
}

extension ArchiveMemberDataSource: BlobReadReporting {
    /// How the member was found (`lookup`), and an index found but not used, with why; nil
    /// before the source is open.
    public var readingNote: String? {
        guard let lookup else { return nil }
        return lookup.description + (unusedIndexReason.map { "; an index was found but not used: \($0)" } ?? "")
    }
}
