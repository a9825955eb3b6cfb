import BlobStream
import BlobStreamCompression
import Foundation

// The libarchive walk: a fresh handle reads the headers up to the member, then its data
// blocks (holes of a sparse member as zeros), and at the end, in `.wholeArchive` mode, the
// rest of the archive so that every check of a filter is reached.

/// Reads a member with libarchive: owns the handle, its current data block and how far
/// into the member it is. Not thread-safe: used under the source's lock.
final class LibArchiveMemberReader {
    /// libarchive's handle, at the member; nil once closed.
    private(set) var handle: ArchiveHandle?
    let naming: ArchiveMemberNaming
    /// What is checked before the member's end is announced.
    let verification: ArchiveVerification
    /// The member's size from its header, and whether it is sparse.
    private var memberLength: Int64?
    private var isSparse = false
    /// The current data block (its bytes are valid until the next libarchive call).
    var block: ArchiveHandle.Block?
    /// Member offset up to which bytes were taken from libarchive (delivered or skipped).
    private(set) var produced: Int64 = 0
    /// libarchive reported the end of the member's data.
    private var dataEnded = false

    /// A reader of the member whose `header` `handle` just read.
    init(
        handle: ArchiveHandle, header: ArchiveHandle.Header, naming: ArchiveMemberNaming,
        verification: ArchiveVerification
    ) {
        self.handle = handle
        self.naming = naming
        self.verification = verification
        memberLength = header.entry.size
        isSparse = header.isSparse
    }

    deinit { handle?.free() }

    /// Frees libarchive's state.
    func close() {
        handle?.free()
        handle = nil
        block = nil
    }

    /// Lends the rest of libarchive's current data block, moving `target` past it (see
    /// `getBuffer`). False, consuming nothing, where `read` has work to do (a hole of a
    /// sparse member, the end); throws what fetching the next block met.
    func lend(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>,
        target: inout Int64
    ) throws(BlobStreamError) -> Bool {
        while true {
            if let current = block {
                let end = current.offset + Int64(current.size)
                // Before the block's data: a hole of a sparse member, which `read` fills.
                if produced < current.offset || current.pointer == nil { return false }
                if target > produced { produced = min(target, end) } // skip to the target
                if produced < end {
                    buffer.pointee =
                        UnsafeMutablePointer(mutating: current.pointer!.assumingMemoryBound(to: UInt8.self))
                        + Int(produced - current.offset)
                    length.pointee = Int(end - produced)
                    produced = end
                    target = produced
                    return true
                }
                block = nil
            }
            if dataEnded { return false }
            if let problem = fetchBlock() { throw problem }
        }
    }

    /// The member has no more bytes: libarchive said so, and no trailing hole remains.
    var isFinished: Bool {
        guard dataEnded, block == nil else { return false }
        if isSparse, let memberLength, produced < memberLength { return false }
        return true
    }

    /// An empty member, at its open: confirms the end now (a zip CRC, a truncation), so
    /// that it is at its end as soon as it is open. True when it is at its end at `target`.
    func confirmEmpty(target: Int64) throws(BlobStreamError) -> Bool {
        if let problem = fetchBlock() { throw problem }
        return isFinished && target == produced
    }

    /// Fetches the next data block into `block` (or marks the end, checking the size);
    /// returns the error instead of setting it.
    private func fetchBlock() -> BlobStreamError? {
        guard let handle else { return naming.makeError(.closed, "closed") }
        do {
            if let next = try handle.nextBlock() {
                if next.offset < produced {
                    return naming.makeError(
                        .corrupt, "libarchive returned data for offset \(next.offset) after offset \(produced)")
                }
                if let memberLength, next.offset + Int64(next.size) > memberLength {
                    return naming.makeError(
                        .corrupt, "the member has more bytes than the \(memberLength) its header gives")
                }
                block = next
            } else {
                dataEnded = true
                block = nil
                if !isSparse, let memberLength, produced < memberLength {
                    return naming.makeError(
                        .truncated,
                        "the archive ends inside the member: \(produced) of its \(memberLength) bytes are there")
                }
                if verification == .wholeArchive, let problem = verifyRest(handle) {
                    return problem
                }
            }
            return nil
        } catch {
            return naming.translate(
                error, input: handle.input, while: "reading the member's data at offset \(produced)")
        }
    }

    /// `.wholeArchive`: after the member's end, when libarchive reads through a filter or
    /// the upstream cannot seek, reads the following entries to the end of the archive
    /// (decompressing what the filter holds, so every block check is reached), then the
    /// upstream to its end (its own end checks; through the gzip layer, the last gzip
    /// trailer). Returns the first problem met. An archive without a filter over a seekable
    /// upstream (a tar, zip or 7z file) has nothing after the member that checks it (a zip
    /// or 7z member's CRC-32 was checked at its end): nothing more is read.
    private func verifyRest(_ handle: ArchiveHandle) -> BlobStreamError? {
        let input = handle.input
        guard handle.hasFilter || !input.canSeek else { return nil }
        do {
            // Each following entry's data is read, not skipped: libarchive reports a
            // decompressor's error met while skipping as a mere truncation. (An encrypted
            // entry's data cannot be read: it is skipped.)
            while try handle.advance() {
                if handle.currentHeader().entry.isEncrypted { continue }
                while try handle.nextBlock() != nil {}
            }
        } catch {
            return naming.translate(
                error, input: input,
                while: "reading the rest of the archive to verify it (the member's bytes may be wrong)")
        }
        while true {
            var bytes: UnsafeRawPointer?
            let n = input.read(lending: &bytes)
            if n == 0 { break }
            if n < 0 {
                return naming.translate(
                    .input, input: input, while: "reading the upstream to its end to verify the archive")
            }
        }
        return nil
    }

    /// Fills `out` with member bytes, skipping first up to `target`, filling holes with
    /// zeros; moves `target` past the bytes delivered. The end comes with the last bytes
    /// when it is confirmed.
    func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int, target: inout Int64) -> MemberReadResult {
        var n = 0
        while n < capacity {
            if let current = block {
                let end = current.offset + Int64(current.size)
                if produced < current.offset {
                    // A hole before this block: zeros.
                    if target > produced {
                        produced = min(target, current.offset)
                        continue
                    }
                    let k = Int(min(Int64(capacity - n), current.offset - produced))
                    (out + n).update(repeating: 0, count: k)
                    n += k
                    produced += Int64(k)
                    continue
                }
                if produced < end {
                    if target > produced {
                        produced = min(target, end)
                        continue
                    }
                    let k = Int(min(Int64(capacity - n), end - produced))
                    UnsafeMutableRawPointer(out + n).copyMemory(
                        from: current.pointer! + Int(produced - current.offset), byteCount: k)
                    n += k
                    produced += Int64(k)
                    continue
                }
                block = nil
            }
            if dataEnded {
                // A trailing hole of a sparse member, up to the size in its header.
                guard isSparse, let memberLength, produced < memberLength else { break }
                if target > produced {
                    produced = min(target, memberLength)
                    continue
                }
                let k = Int(min(Int64(capacity - n), memberLength - produced))
                (out + n).update(repeating: 0, count: k)
                n += k
                produced += Int64(k)
                continue
            }
            if let problem = fetchBlock() { return .failed(problem, delivered: n) }
        }
        if target < produced { target = produced } // the bytes delivered
        // Confirm the end with the last bytes (a zip CRC is checked there): `isAtEnd` then
        // comes with them, and a failure is reported by the next read, never as a clean end.
        if n > 0, !dataEnded, let memberLength, produced == memberLength, target == produced,
            block.map({ $0.offset + Int64($0.size) <= produced }) ?? true
        {
            block = nil
            if let problem = fetchBlock() { return .failed(problem, delivered: n) }
            if block != nil, block!.size > 0 {
                return .failed(
                    naming.makeError(.corrupt, "the member has more bytes than the \(memberLength) its header gives"),
                    delivered: n)
            }
        }
        if isFinished {
            if target > produced {
                return .failed(
                    naming.makeError(
                        .invalidOffset, "offset \(target) is past the end of the member (\(produced) bytes)"),
                    delivered: n)
            }
            return MemberReadResult(count: n, atEnd: true)
        }
        return MemberReadResult(count: n)
    }

    /// What the checks vouch for before the end (see `ArchiveMemberDataSource.verifiedPrefix`).
    var verifiedPrefix: BlobVerifiedPrefix {
        guard let handle else { return .checked(upTo: 0) }
        if handle.formatChecksMembers { return .checked(upTo: 0) } // zip, 7z, …: a CRC per member
        // `.wholeArchive` reads the rest of the archive where `verifyRest` does: through a
        // filter, or over an upstream that cannot seek and checks something itself (a gzip
        // source's trailers come at its end).
        let upstreamChecks = handle.input.upstream.verifiedPrefix != .nothingToCheck
        if handle.input.startsWithUncheckedZstdFrame { return .nothingToCheck }
        if verification == .wholeArchive && (handle.hasFilter || (!handle.input.canSeek && upstreamChecks)) {
            return .checked(upTo: 0)
        }
        return .nothingToCheck
    }
}
