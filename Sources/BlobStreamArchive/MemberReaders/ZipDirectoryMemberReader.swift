import BlobStream
import BlobStreamCompression
import Foundation

// A zip member found through the zip's own central directory: a zip carries its index, so
// over any upstream that can seek (a file, an in-memory source, a remote object read by
// range) no `.blobidx` is needed to open a member with a few reads.

/// Finds a zip member in the zip's own central directory, over an upstream that can seek;
/// the member is then read where it is (`MemberSliceReader`). Holds no state of its own
/// between opens. Runs under the source's lock.
struct ZipDirectoryMemberReader {
    /// The archive read and the member asked for.
    let archive: MemberInArchive
    /// Which index to use (`.none`: not even the central directory).
    let indexOption: ArchiveIndexOption
    /// The inflate engine of a deflate member.
    let inflateEngine: InflateEngine

    /// Over an upstream that can seek, a zip (its bytes start with a local header or an
    /// empty zip's end record, and end with an end-of-central-directory record) has its
    /// member found in the central directory, its header handed to `accept`, and its slice
    /// returned: a stored member is read where it is, a deflate member inflated by the
    /// compression kit (ISA-L when it loads), both checked against the directory's size and
    /// CRC-32. Nil when this does not apply (not such a zip, `ArchiveIndexOption.none`, or a
    /// member encrypted or compressed otherwise: libarchive reads those); the reader is then
    /// back at offset 0.
    ///
    /// - Throws: `.notFound` when the directory lists no such member; `.corrupt` naming
    ///   the member and the offset when the directory or the member's local header is
    ///   damaged, disagrees, or points past the archive's end.
    func locate(accept: (ArchiveHandle.Header) throws(BlobStreamError) -> String?) throws(BlobStreamError)
        -> MemberSlice?
    {
        if case .none = indexOption { return nil }
        guard LibArchiveInput.canSeek(archive.upstream), let length = archive.upstream.length, length >= 22 else {
            return nil
        }
        defer { _ = try? archive.reader.seek(to: 0) }
        let access = ArchiveOffsetReader(
            reader: archive.reader, length: length, name: archive.naming.archiveName, member: archive.naming.spelling)
        guard let head = try? access.bytes(at: 0, count: 4, what: "the signature") else { return nil }
        let signature = Array(head)
        guard signature == [0x50, 0x4B, 0x03, 0x04] || signature == [0x50, 0x4B, 0x05, 0x06] else { return nil }
        // A zip cut before its end record has no directory: libarchive reads its local headers.
        guard let directory = try access.zipCentralDirectory() else { return nil }
        guard let member = try access.zipMember(named: archive.naming.wanted, in: directory) else {
            throw archive.naming.makeError(
                .notFound, "no such member in the archive (its central directory lists none by that name)")
        }
        let deflated = member.compressionMethod == 8
        if (member.compressionMethod != 0 && !deflated) || member.isEncrypted { return nil }
        // A zip holds no hard links: a file is taken, anything else refused by name.
        _ = try accept(ArchiveHandle.Header(pathBytes: member.nameBytes, entry: member.entry, isSparse: false))
        var found = MemberSlice(
            start: member.dataOffset, length: member.size, expectedCRC: member.crc32, mismatchCode: .corrupt)
        if deflated {
            found.inflation = try MemberInflation(
                compressedLength: member.compressedSize ?? 0, name: archive.naming.messagePrefix, engine: inflateEngine)
        }
        // The member's bytes in one request, and nothing read ahead past them.
        archive.reader.expectRead(member.dataOffset..<member.dataOffset + (member.compressedSize ?? member.size))
        return found
    }
}
