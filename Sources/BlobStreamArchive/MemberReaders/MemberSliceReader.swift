import BlobStream
import BlobStreamSystem
import Foundation

// Reading a member straight from the upstream, where its bytes are (a slice): after walking
// an uncompressed tar's headers, or through an index. libarchive is not involved; the
// member's CRC-32, when known (an index), is checked where the member ends.

/// Where a member's bytes are in the upstream, and the running check of what was read.
struct MemberSlice {
    /// Upstream offset of the member's first byte.
    var start: Int64
    var length: Int64
    /// The CRC-32 the bytes must have (from an index, or a zip's own), or nil.
    var expectedCRC: UInt32?
    /// The code of a mismatch: `.changed` (a tar member differs from what was indexed) or
    /// `.corrupt` (a zip member fails its own CRC-32).
    var mismatchCode: BlobStreamError.Code
    /// CRC-32 of the member's bytes [0, hashed).
    var crc: UInt32 = 0
    var hashed: Int64 = 0
    /// For a zip member compressed with deflate: the inflating (`length` is then the size
    /// of the output, `hashed` becomes `length` once the end was checked).
    var inflation: MemberInflation?
    /// For a tar.gz or tar.xz member read through an index: the decompressing of the archive
    /// (`start` and `length` are then in the decompressed tar).
    var decompression: (any MemberDecompression)?
}

/// Reads a member where its bytes are in the upstream (`MemberSlice`): a tar member found
/// by walking the headers (`TarWalkMemberReader`), a zip member found in the central
/// directory (`ZipDirectoryMemberReader`) or any member found through an index
/// (`IndexedMemberReader`): stored bytes read as they are, deflate inflated, a compressed
/// tar's member decompressed. Owns the slice, the running checks and the archive file of
/// `storedRegion`. Not thread-safe: used under the source's lock.
final class MemberSliceReader {
    /// The archive read and the member asked for.
    let archive: MemberInArchive
    /// Where the member is, and the running check of what was read.
    var slice: MemberSlice
    /// Member offset up to which bytes were taken (the source's offset after a read or a move).
    var produced: Int64 = 0
    /// The archive file opened by path for `storedRegion`, once checked to be the
    /// upstream's file.
    private var storedBytes: PositionalFile?
    private var storedBytesFileChecked = false

    init(archive: MemberInArchive, slice: MemberSlice) {
        self.archive = archive
        self.slice = slice
    }

    /// The source closed: the decoders and the archive file go (their threads and buffers).
    func close() {
        slice.inflation = nil
        slice.decompression = nil
        storedBytes = nil
    }

    /// Reads up to `capacity` member bytes at `target` into `out`, moving `target` past
    /// them; 0 bytes and no problem at the confirmed end.
    func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int, target: inout Int64) -> MemberReadResult {
        if slice.inflation != nil { return readDeflate(into: out, capacity: capacity, target: &target) }
        if slice.decompression != nil { return readDecompressed(into: out, capacity: capacity, target: &target) }
        if let problem = catchUpHashing(to: target) { return .failed(problem) }
        var s = slice
        if target >= s.length {
            if let problem = checkEnd() ?? readOnToUpstreamCheck() { return .failed(problem) }
            return MemberReadResult(count: 0)
        }
        let position = s.start + target
        do {
            try archive.reader.seek(to: position)
        } catch {
            return .failed(archive.naming.upstreamFailed(error, "refused to move to offset \(position)"))
        }
        let wanted = Int(min(Int64(capacity), s.length - target))
        switch archive.reader.read(into: out, maxLength: wanted, waiting: true) {
        case .bytes(let n):
            if s.expectedCRC != nil, s.hashed == target {
                s.crc = ZlibCRC32.update(s.crc, UnsafeRawBufferPointer(start: out, count: n))
                s.hashed += Int64(n)
            }
            slice = s
            target += Int64(n)
            produced = target
            if target == s.length {
                if let problem = checkEnd() ?? readOnToUpstreamCheck() { return .failed(problem, delivered: n) }
                return MemberReadResult(count: n, atEnd: true)
            }
            return MemberReadResult(count: n)
        case .end, .starved:
            return .failed(truncatedInSlice(at: position))
        case .failed(let error):
            return .failed(
                archive.naming.upstreamFailed(archive.reader.source.error ?? error, "failed at offset \(position)"))
        }
    }

    /// Lends the member's next bytes from the reader's buffer (see `getBuffer`); false when
    /// `read` has work to do (the end, an error).
    func lend(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>,
        target: inout Int64
    ) -> Bool {
        if slice.inflation != nil || slice.decompression != nil { return false } // `read` inflates
        if catchUpHashing(to: target) != nil { return false }
        var s = slice
        guard target < s.length else { return false }
        guard (try? archive.reader.seek(to: s.start + target)) != nil,
            case .bytes(let bytes) = archive.reader.fill(atLeast: 1, waiting: true)
        else { return false }
        let n = Int(min(Int64(bytes.count), s.length - target))
        let lent = UnsafeRawBufferPointer(rebasing: bytes[0..<n])
        if s.expectedCRC != nil, s.hashed == target {
            s.crc = ZlibCRC32.update(s.crc, lent)
            s.hashed += Int64(n)
        }
        archive.reader.consume(n)
        slice = s
        target += Int64(n)
        produced = target
        buffer.pointee = UnsafeMutablePointer(mutating: lent.baseAddress!.assumingMemoryBound(to: UInt8.self))
        length.pointee = n
        return true
    }

    /// Moves to member offset `offset` (any move is an offset: a CRC to check reads what it
    /// skips). True when the member's end is then confirmed.
    func move(to offset: Int64) -> Bool {
        produced = offset
        return offset == slice.length && (slice.expectedCRC == nil || slice.hashed == slice.length)
    }

    /// An empty member, at its open: its CRC-32 must be 0. True when it is at its end (the
    /// offset asked for is 0).
    func confirmEmpty(target: Int64) throws(BlobStreamError) -> Bool {
        if let expected = slice.expectedCRC, expected != 0 {
            throw archive.naming.makeError(
                slice.mismatchCode, "the member is empty, but its CRC-32 should be \(expected)")
        }
        return target == 0
    }

    /// What the checks vouch for before the end (see `ArchiveMemberDataSource.verifiedPrefix`):
    /// a CRC-32 or a decoder's checks come at the member's end; a walked tar member over an
    /// upstream that checks (a gzip source with an index) has the upstream's checks, in the
    /// member's offsets.
    var verifiedPrefix: BlobVerifiedPrefix {
        let checked = slice.expectedCRC != nil || slice.inflation != nil || slice.decompression != nil
        if checked { return .checked(upTo: 0) }
        guard case .checked(let upTo) = archive.reader.source.verifiedPrefix else { return .nothingToCheck }
        return .checked(upTo: max(0, min(slice.length, upTo - slice.start)))
    }

    /// With a CRC to check, the bytes before `target` are read and hashed first (a forward
    /// move reads what it skips; a backward one starts the hash again), so that the
    /// member's end is announced only after every byte was checked.
    private func catchUpHashing(to target: Int64) -> BlobStreamError? {
        var s = slice
        guard s.expectedCRC != nil else { return nil }
        if target < s.hashed {
            s.crc = 0
            s.hashed = 0
        }
        defer { slice = s }
        while s.hashed < target {
            let position = s.start + s.hashed
            do {
                try archive.reader.seek(to: position)
            } catch {
                return archive.naming.upstreamFailed(error, "refused to move to offset \(position)")
            }
            switch archive.reader.fill(atLeast: 1, waiting: true) {
            case .bytes(let bytes):
                let n = Int(min(Int64(bytes.count), target - s.hashed))
                s.crc = ZlibCRC32.update(s.crc, UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
                s.hashed += Int64(n)
                archive.reader.consume(n)
            case .end, .starved: return truncatedInSlice(at: position)
            case .failed(let error):
                return archive.naming.upstreamFailed(
                    archive.reader.source.error ?? error, "failed at offset \(position)")
            }
        }
        return nil
    }

    /// At the member's end: the CRC-32, when there is one to check.
    private func checkEnd() -> BlobStreamError? {
        let s = slice
        guard let expected = s.expectedCRC, s.hashed == s.length else { return nil }
        if s.crc == expected { return nil }
        let what =
            s.mismatchCode == .changed
            ? "the member's bytes changed since the archive was indexed (CRC-32 \(hex(s.crc)), the index says \(hex(expected)))"
            : "a CRC check failed on the member's bytes at offset \(s.start) (CRC-32 \(hex(s.crc)), the archive says \(hex(expected)))"
        return archive.naming.makeError(s.mismatchCode, what)
    }

    /// A member walked in an uncompressed tar over an upstream with checks of its own (a
    /// gzip source whose index has chunk CRC-32s): its clean end waits until the upstream's
    /// checks cover its last byte (`BlobVerifiedPrefix`), reading the upstream on past it,
    /// discarding, to its next check point (at most one chunk of the gzip index).
    private func readOnToUpstreamCheck() -> BlobStreamError? {
        let s = slice
        guard s.expectedCRC == nil, s.inflation == nil, s.decompression == nil else { return nil }
        let end = s.start + s.length
        if archive.reader.source.verifiedPrefix.covers(end) { return nil }
        do {
            try archive.reader.seek(to: end)
        } catch {
            return archive.naming.upstreamFailed(error, "refused to move to offset \(end) to read on to its next check")
        }
        let size = 64 * 1024
        let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        defer { scratch.deallocate() }
        while !archive.reader.source.verifiedPrefix.covers(end) {
            switch archive.reader.read(into: scratch, maxLength: size, waiting: true) {
            case .bytes: continue
            case .end: return nil // a clean end: every check passed
            case .starved:
                return archive.naming.makeError(
                    .sourceFailed, "the upstream had nothing past offset \(end), where the member's bytes are checked")
            case .failed(let error):
                return archive.naming.upstreamFailed(
                    archive.reader.source.error ?? error,
                    "failed while being read on past the member to the check of its bytes (the member's bytes may be wrong)"
                )
            }
        }
        return nil
    }

    private func hex(_ value: UInt32) -> String { String(format: "%08x", value) }

    private func truncatedInSlice(at position: Int64) -> BlobStreamError {
        let have = max(0, min((archive.upstream.length ?? position) - slice.start, slice.length))
        return archive.naming.makeError(
            .truncated,
            "the archive is truncated: it ends at offset \(position), inside the member: \(have) of its \(slice.length) bytes are there"
        )
    }
}

extension MemberSliceReader {
    /// Where the member's next bytes (from `target`) lie in the archive file at
    /// `archivePath`, when they are stored there unchanged and nothing checks them (see
    /// `ArchiveMemberDataSource.storedRegion`); nil otherwise.
    func storedRegion(from target: Int64, archivePath: String?) -> BlobStoredRegion? {
        let s = slice
        guard s.inflation == nil, s.decompression == nil, s.expectedCRC == nil, target < s.length,
            let file = storedBytesFile(archivePath: archivePath)
        else { return nil }
        return BlobStoredRegion(descriptor: file.descriptor, fileOffset: s.start + target, count: s.length - target)
    }

    /// The archive file opened by its path, once, when it is the file the upstream reads
    /// (a regular file with the upstream's identity); nil otherwise.
    private func storedBytesFile(archivePath: String?) -> PositionalFile? {
        if storedBytesFileChecked { return storedBytes }
        storedBytesFileChecked = true
        // Looked at before it is opened: opening a FIFO put there since would wait for a writer.
        guard let path = archivePath,
            let identity = archive.upstream.property(forKey: .blobContentIdentityKey) as? String,
            case .success(let before) = FileStatus.at(path), before.isRegular, before.identity == identity,
            let file = try? PositionalFile(path: path), let status = try? file.status(), status.isRegular,
            status.identity == identity
        else { return nil }
        storedBytes = file
        return file
    }
}
