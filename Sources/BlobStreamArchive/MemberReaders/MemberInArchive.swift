import BlobStream
import BlobStreamCompression

/// What every member reader starts from: the archive's bytes (through the source's upstream
/// reader) and the member asked for (its name and how names compare).
struct MemberInArchive {
    /// The archive's bytes, read through libarchive's callbacks or directly.
    let reader: BlobUpstreamReader
    /// The member asked for, and how messages name it.
    let naming: ArchiveMemberNaming

    /// The archive's source.
    var upstream: any BlobDataSource { reader.source }
}
