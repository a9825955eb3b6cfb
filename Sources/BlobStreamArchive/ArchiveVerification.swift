import BlobStream

/// How much an `ArchiveMemberDataSource` checks before it announces the member's clean end.
///
/// Compressed archives are checked in blocks or streams that do not end with a member: an
/// xz block's check, a bzip2 block's CRC, a zstd frame's checksum, a gzip member's CRC-32
/// and size come after bytes of the member were already handed out. A member whose bytes
/// were garbled in such a block only fails when that check is reached.
public enum ArchiveVerification: Sendable, Hashable {
    /// The default. After the member's last byte, and before its end is announced, reads the
    /// rest of the archive as `bsdtar -x` does when it scans the whole archive: the
    /// following headers up to the end (decompressing the rest of a compressed stream, so
    /// every block check is reached) and the rest of the gzip layer (whose CRC-32 and size
    /// this module checks: libarchive does not), then a non-seekable upstream (a pipe, a
    /// gzip stream, another archive's member) to its end so that its own end checks run.
    /// Any error met
    /// there fails the member (naming the archive, the member and what failed) instead of
    /// a clean end.
    ///
    /// Costs reading and decompressing what follows the member in a compressed archive.
    /// An archive without a compression filter over a seekable upstream (a tar, zip, 7z,
    /// cpio file) has nothing after the member that checks it: a zip or 7z member's CRC-32
    /// is checked at its end, a tar body has no checksum. There nothing more is read.
    case wholeArchive

    /// Fast: announces the end when the member's last byte was handed out, after the checks
    /// libarchive makes within the member (header checksums, a zip or 7z member's CRC-32,
    /// blocks that end inside the member). Does NOT verify the rest of the compressed
    /// stream, so a garbled byte in a compressed block, zstd frame or gzip member that goes
    /// on after the member's end can give wrong bytes with a clean end.
    case memberOnly
}
