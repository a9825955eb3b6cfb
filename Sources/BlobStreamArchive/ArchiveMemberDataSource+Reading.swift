import BlobStream
import Foundation

// Reading: lending libarchive's blocks, the member's data blocks, holes, offsets, the end
// and its verification (the second half of the state machine). Everything below
// `getBuffer` runs with `lock` held.

extension ArchiveMemberDataSource {
    /// Lends the rest of libarchive's current data block (for an uncompressed tar, the
    /// block read from the upstream) instead of copying it: the bytes are consumed and stay
    /// valid until the next call. False, consuming nothing, where `read` has work to do
    /// (a hole of a sparse member, the end, an error, before the open completed).
    ///
    /// The end is confirmed by the next call, not with the last bytes lent (confirming
    /// it means asking libarchive for more, which would end the loan early), so a check
    /// that fails there (a zip CRC) fails that next call.
    public func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>
    ) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard failure == nil, pending == nil, !closed, handle != nil || slice != nil, state.isOpenCompleted else {
            return false
        }
        if slice != nil { return lendSlice(buffer, length: length) }
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
            if let problem = fetchBlock() {
                fail(problem)
                return false
            }
        }
    }

    /// The member has no more bytes: libarchive said so, and no trailing hole remains.
    var isFinished: Bool {
        guard dataEnded, block == nil else { return false }
        if isSparse, let memberLength, produced < memberLength { return false }
        return true
    }

    /// Fetches the next data block into `block` (or marks the end, checking the size);
    /// returns the error instead of setting it.
    func fetchBlock() -> BlobStreamError? {
        guard let handle else { return makeError(.closed, "closed") }
        do {
            if let next = try handle.nextBlock() {
                if next.offset < produced {
                    return makeError(
                        .corrupt, "libarchive returned data for offset \(next.offset) after offset \(produced)")
                }
                if let memberLength, next.offset + Int64(next.size) > memberLength {
                    return makeError(.corrupt, "the member has more bytes than the \(memberLength) its header gives")
                }
                block = next
            } else {
                dataEnded = true
                block = nil
                if !isSparse, let memberLength, produced < memberLength {
                    return makeError(
                        .truncated,
                        "the archive ends inside the member: \(produced) of its \(memberLength) bytes are there")
                }
                if verification == .wholeArchive, let problem = verifyRest(handle) {
                    return problem
                }
            }
            return nil
        } catch {
            return translate(error, input: handle.input, while: "reading the member's data at offset \(produced)")
        }
    }

    /// `.wholeArchive`: after the member's end, when libarchive reads through a filter or
    /// the upstream cannot seek, reads the following entries to the end of the archive
    /// (decompressing what the filter holds, so every block check is reached), then the
    /// upstream to its end (its own end checks; through the gzip layer, the last gzip
    /// trailer). Returns the first problem met. An archive without a filter over a seekable
    /// upstream (a tar, zip or 7z file) has nothing after the member that checks it (a zip
    /// or 7z member's CRC-32 was checked at its end): nothing more is read.
    func verifyRest(_ handle: ArchiveHandle) -> BlobStreamError? {
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
            return translate(
                error, input: input,
                while: "reading the rest of the archive to verify it (the member's bytes may be wrong)")
        }
        while true {
            var bytes: UnsafeRawPointer?
            let n = input.read(lending: &bytes)
            if n == 0 { break }
            if n < 0 {
                return translate(.input, input: input, while: "reading the upstream to its end to verify the archive")
            }
        }
        return nil
    }

    /// Fills `out` with member bytes, skipping first up to `target`, filling holes with
    /// zeros. Returns the count; 0 at the end or after an error (then `failure` is set).
    /// Sets `isAtEnd` with the last bytes when the end is confirmed.
    func pump(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
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
            if let problem = fetchBlock() {
                return stop(problem, delivered: n)
            }
        }
        if target < produced { target = produced } // the bytes delivered
        // Confirm the end with the last bytes (a zip CRC is checked there): `isAtEnd` then
        // comes with them, and a failure is reported by the next read, never as a clean end.
        if n > 0, !dataEnded, let memberLength, produced == memberLength, target == produced,
            block.map({ $0.offset + Int64($0.size) <= produced }) ?? true
        {
            block = nil
            if let problem = fetchBlock() { return stop(problem, delivered: n) }
            if block != nil, block!.size > 0 {
                return stop(
                    makeError(.corrupt, "the member has more bytes than the \(memberLength) its header gives"),
                    delivered: n)
            }
        }
        if isFinished {
            if target > produced {
                return stop(
                    makeError(.invalidOffset, "offset \(target) is past the end of the member (\(produced) bytes)"),
                    delivered: n)
            }
            state.isAtEnd = true
        }
        return n
    }

    /// Records `problem`: pending when `delivered` bytes go out with this read, at once
    /// otherwise.
    func stop(_ problem: BlobStreamError, delivered: Int) -> Int {
        if delivered > 0 {
            pending = problem
            return delivered
        }
        fail(problem)
        return -1
    }

    func fail(_ error: BlobStreamError) {
        if failure == nil { failure = error }
        block = nil
        state.error = failure
    }
}

extension ArchiveMemberDataSource {
    /// What the checks of this member vouch for (see `BlobVerifiedPrefix`): every byte once
    /// the member ended cleanly (its checks passed), none before. `.nothingToCheck` where
    /// nothing checks a member's bytes: an uncompressed tar, cpio, ar or ISO 9660 member
    /// read without an index over an upstream that checks nothing (over a gzip source with an
    /// index, a member walked in place waits for the source's chunk checks: its prefix is what
    /// they covered; over one that cannot seek, the checks come at the archive's end in
    /// `.wholeArchive` mode), and one of a compressed one read in
    /// `.memberOnly` mode (its filter's checks come after the member), and a tar.zst whose
    /// zstd frame has no content checksum. A zip or 7z member's CRC-32, an indexed
    /// member's CRC-32 and a filter's checks in `.wholeArchive` mode come at the member's
    /// end: a reader that stops early reads on to it.
    public var verifiedPrefix: BlobVerifiedPrefix {
        lock.lock()
        defer { lock.unlock() }
        if state.isAtEnd && failure == nil && pending == nil && state.error == nil {
            return .checked(upTo: memberLength ?? produced)
        }
        if let slice {
            let checked = slice.expectedCRC != nil || slice.inflation != nil || slice.decompression != nil
            if checked { return .checked(upTo: 0) }
            // A walked tar member over an upstream that checks (a gzip source with an index):
            // the upstream's checks, in the member's offsets.
            guard case .checked(let upTo) = reader.source.verifiedPrefix else { return .nothingToCheck }
            return .checked(upTo: max(0, min(slice.length, upTo - slice.start)))
        }
        guard let handle else { return .checked(upTo: 0) } // not located yet: assume checks
        if handle.formatChecksMembers { return .checked(upTo: 0) } // zip, 7z, …: a CRC per member
        // `.wholeArchive` reads the rest of the archive where `verifyRest` does: through a
        // filter, or over an upstream that cannot seek and checks something itself (a gzip
        // source's trailers come at its end).
        let upstreamChecks = reader.source.verifiedPrefix != .nothingToCheck
        if handle.input.startsWithUncheckedZstdFrame { return .nothingToCheck }
        if verification == .wholeArchive && (handle.hasFilter || (!handle.input.canSeek && upstreamChecks)) {
            return .checked(upTo: 0)
        }
        return .nothingToCheck
    }
}
