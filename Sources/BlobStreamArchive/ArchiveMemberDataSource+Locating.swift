import BlobStream
import Foundation

// Opening: from the upstream's open to the member's header (the first half of the state
// machine; `ArchiveMemberDataSource+Reading.swift` is the second). The member is found by
// the readers in MemberReaders/, tried in turn.

extension ArchiveMemberDataSource {
    /// From the reader's observers of an asynchronous upstream (any thread): while the open
    /// is pending, look again on `openQueue`.
    func upstreamAnnounced() {
        guard !state.isOpenCompleted, state.error == nil else { return }
        openQueue.async { [weak self] in self?.upstreamChanged() }
    }

    /// Called on `openQueue` after the asynchronous upstream announced something.
    func upstreamChanged() {
        lock.lock()
        defer { lock.unlock() }
        guard life.started, !life.closed, life.failure == nil, !state.isOpenCompleted, !life.locating else { return }
        if let error = upstream.error {
            fail(naming.upstreamFailed(error, "failed to open"))
        } else if upstream.isOpenCompleted {
            life.locating = true
            finishOpen()
            life.locating = false
        }
    }

    /// The upstream is open: find the member, apply a pending offset, announce.
    func finishOpen() {
        do {
            try locate()
        } catch {
            if !life.closed { fail(error) }
            return
        }
        if let memberLength, target > memberLength {
            fail(makeError(.invalidOffset, "offset \(target) is past the end of the member (\(memberLength) bytes)"))
            return
        }
        if memberLength == 0, let reading {
            // Confirm the end now (a CRC, a truncation), so that an empty member is at its
            // end as soon as it is open.
            let atEnd: Bool
            do {
                atEnd = try reading.confirmEmpty(target: target)
            } catch {
                fail(error)
                return
            }
            state.isOpenCompleted = true
            if atEnd { state.isAtEnd = true } else { state.hasBytesAvailable = true }
            return
        }
        state.isOpenCompleted = true
        state.hasBytesAvailable = true
    }

    /// Finds the member and makes its reader: through the member index when there is one
    /// (`IndexedMemberReader`), else through a zip's central directory
    /// (`ZipDirectoryMemberReader`), else by its header (`TarWalkMemberReader`: walked in an
    /// uncompressed tar, read by libarchive otherwise). Resets the data cursor. The upstream
    /// is at offset 0 when it is called.
    func locate() throws(BlobStreamError) {
        reading = nil
        let archive = MemberInArchive(reader: reader, naming: naming)
        if let slice = try indexed.locate(options: options, accept: accept) {
            reading = .slice(MemberSliceReader(archive: archive, slice: slice))
            found.lookup = .memberIndex
            return
        }
        if indexed.index == nil {
            let directory = ZipDirectoryMemberReader(
                archive: archive, indexOption: options.index, inflateEngine: options.inflateEngine)
            if let slice = try directory.locate(accept: accept) {
                reading = .slice(MemberSliceReader(archive: archive, slice: slice))
                found.lookup = .zipCentralDirectory
                return
            }
        }
        let walk = TarWalkMemberReader(
            archive: archive, inflateEngine: options.inflateEngine, verification: verification)
        switch try walk.locate(accept: accept) {
        case .walked(let slice):
            found.lookup = .tarHeaderWalk
            reading = .slice(MemberSliceReader(archive: archive, slice: slice))
        case .libarchive(let libarchive):
            found.lookup = .libarchive
            reading = .libarchive(libarchive)
        }
    }

    /// Takes the member's header: a file (or a hard link with data of its own) becomes the
    /// member read (nil); a hard link without data gives its target's name; anything else
    /// is an error.
    func accept(_ header: ArchiveHandle.Header) throws(BlobStreamError) -> String? {
        let entry = header.entry
        if entry.isEncrypted {
            throw makeError(.unsupported, "the member is encrypted (encrypted entries are not supported)")
        }
        switch entry.type {
        case .hardLink where (entry.size ?? 0) == 0:
            return entry.linkTarget ?? ""
        case .file, .hardLink:
            found.entry = entry
            return nil
        case .directory:
            throw makeError(.unsupported, "the member is a directory, not a file")
        case .symbolicLink:
            throw makeError(
                .unsupported,
                "the member is a symbolic link to '\(entry.linkTarget ?? "")', not a file (name its target instead)")
        default:
            throw makeError(.unsupported, "the member is a \(entry.type), not a file")
        }
    }
}
