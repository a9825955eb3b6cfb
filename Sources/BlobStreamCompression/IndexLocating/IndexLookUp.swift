/// What looking for an index of a source found, for every kind of index
/// (`GzipIndex.LookUp`, `ArchiveIndex.LookUp`): one that matches, none, or one that is there
/// and must not be used (and why).
public enum IndexLookUp<Index: Sendable>: Sendable {
    /// An index that matches the source (its identity: size and times with sampled bytes for
    /// a file, size and strong ETag for an object; for a foreign gzip index the user named,
    /// its compressed size).
    case matching(Index)
    /// No index beside the source (and none named, none kept in the cache).
    case absent
    /// An index found beside the source that cannot be used on it: stale (the source
    /// changed), corrupt, foreign, made for a file, or the source has no strong ETag. It is
    /// never used; build a new one.
    case unusable(reason: String)
}
