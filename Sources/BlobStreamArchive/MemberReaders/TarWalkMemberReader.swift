import BlobStream
import BlobStreamCompression
import Foundation

// Finding a member by its header: an uncompressed tar over a seekable upstream has its headers
// walked in place (`TarHeaderWalker`), the member then read where it is; anything else, and
// what the walk leaves (sparse members, multi-volume parts, a damaged header, …), is read by
// libarchive, the reference. Hard links are followed to their targets (stored earlier), and in
// an uncompressed tar whose upstream names its bytes, `TarHeaderCache` says where to start.

/// Finds a member by walking the headers (in place, or with libarchive) from the start of the
/// archive, or from where `TarHeaderCache` says. One search per open (and per move back); its
/// state is the search's own. Runs under the source's lock.
struct TarWalkMemberReader {
    /// The archive read and the member asked for.
    let archive: MemberInArchive
    /// The inflate engine of libarchive's gzip layer.
    let inflateEngine: InflateEngine
    /// What libarchive checks before the member's end is announced.
    let verification: ArchiveVerification

    /// Where the member was found, and what reads it.
    enum Found {
        /// Walked in place: the member's bytes where they are (no check of their own).
        case walked(MemberSlice)
        /// By libarchive: its handle at the member.
        case libarchive(LibArchiveMemberReader)
    }

    /// What a pass over the headers found.
    enum HeaderScan {
        /// The member's header, and where it was read.
        case found(ArchiveHandle.Header, Place)
        /// The archive ended without it.
        case missing
        /// A remembered position did not hold the expected header: search again from the start.
        case stale
    }

    /// Where a header found was read.
    enum Place {
        /// By libarchive: the handle is left at it.
        case libarchive(ArchiveHandle)
        /// By the walk: the entry, whose data the member's bytes are.
        case walked(TarWalkEntry)
    }

    /// Reads headers up to the member, following hard links, and hands its header to
    /// `accept` (nil: the member is read; a name: a hard link's target, searched for next).
    /// Reading starts at offset 0 of the upstream, or, for an uncompressed tar searched before
    /// (see `TarHeaderCache`), at the member's header or where the last search stopped. The
    /// upstream is at offset 0 when it is called.
    func locate(accept: (ArchiveHandle.Header) throws(BlobStreamError) -> String?) throws(BlobStreamError) -> Found {
        var wanted = archive.naming.wanted
        var links: [String] = []
        var atStart = true
        let identity =
            LibArchiveInput.canSeek(archive.upstream)
            ? archive.upstream.property(forKey: .blobContentIdentityKey) as? String : nil
        var useIndex = identity != nil
        // An uncompressed tar over a seekable upstream: its headers are walked here and the
        // member read where it is; libarchive reads what the walk leaves to it.
        var walkable =
            LibArchiveInput.canSeek(archive.upstream)
            && TarHeaderWalker.startsWithTarHeader(archive.reader, length: archive.upstream.length!)
        if walkable { _ = try? archive.reader.seek(to: 0) }
        while true {
            let plan: TarHeaderCache.Plan
            var recorded: TarHeaderCache.Snapshot?
            var start: Int64 = 0
            if useIndex, let identity {
                plan = TarHeaderCache.plan(
                    identity: identity, hash: wanted.withUnsafeBufferPointer(TarHeaderCache.hash))
            } else {
                plan = .scan
            }
            switch plan {
            case .scan: recorded = identity != nil ? TarHeaderCache.Snapshot() : nil
            case .jump(let position): start = position
            case .resume(let snapshot):
                start = snapshot.last
                recorded = snapshot
            }
            if start != 0 || !atStart { try moveUpstream(to: start, followingLinks: links) }
            atStart = start == 0
            let scan: HeaderScan
            if walkable {
                var walkRecord = recorded
                if let walked = walkHeaders(for: wanted, plan: plan, start: start, recording: &walkRecord) {
                    recorded = walkRecord
                    scan = walked
                } else {
                    walkable = false
                    if start != 0 {
                        try moveUpstream(to: start, followingLinks: links)
                    } else {
                        _ = archive.reader.rewindArchive()
                    }
                    scan = try scanHeaders(for: wanted, plan: plan, start: start, recording: &recorded)
                }
            } else {
                scan = try scanHeaders(for: wanted, plan: plan, start: start, recording: &recorded)
            }
            switch scan {
            case .stale:
                TarHeaderCache.forget(identity: identity!)
                useIndex = false
                continue
            case .missing:
                if let recorded { TarHeaderCache.store(recorded, identity: identity!) }
                if let target = links.last {
                    throw archive.naming.makeError(
                        .notFound, "it is a hard link to '\(target)', which is not in the archive")
                }
                throw archive.naming.makeError(.notFound, "no such member in the archive")
            case .found(let header, let place):
                if let recorded { TarHeaderCache.store(recorded, identity: identity!) }
                guard let target = try accept(header) else {
                    switch place {
                    case .walked(let entry):
                        return .walked(
                            MemberSlice(
                                start: entry.dataOffset, length: entry.size, expectedCRC: nil, mismatchCode: .corrupt))
                    case .libarchive(let handle):
                        return .libarchive(
                            LibArchiveMemberReader(
                                handle: handle, header: header, naming: archive.naming, verification: verification))
                    }
                }
                // A hard link without data of its own: read its target, stored earlier.
                links.append(target)
                guard links.count <= 16 else {
                    throw archive.naming.makeError(
                        .corrupt, "hard links form a loop or a chain too long: \(links.joined(separator: " -> "))")
                }
                wanted = ArchiveMemberDataSource.normalized(Array(target.utf8))
                atStart = false
            }
        }
    }

    /// Walks headers from `start` (the upstream's offset) until one carries the name
    /// `wanted`, recording positions as `scanHeaders` does; no libarchive handle is made.
    /// Nil when the walk met something it leaves to libarchive (or a damaged header:
    /// libarchive, the reference, reports it).
    private func walkHeaders(
        for wanted: [UInt8], plan: TarHeaderCache.Plan, start: Int64, recording recorded: inout TarHeaderCache.Snapshot?
    ) -> HeaderScan? {
        var walker = TarHeaderWalker(reader: archive.reader, length: archive.upstream.length!, offset: start)
        var first = true
        while true {
            let step: TarHeaderWalker.Step
            do {
                step = try walker.next()
            } catch {
                return first && start != 0 ? .stale : nil
            }
            switch step {
            case .unsupported: return nil
            case .end: return first && start != 0 ? .stale : .missing
            case .entry(let entry):
                let name = ArchiveMemberDataSource.normalized(entry.nameBytes)
                let hash = name.withUnsafeBufferPointer(TarHeaderCache.hash)
                let matches = name == wanted
                if first, case .resume(let snapshot) = plan, hash != snapshot.lastHash { return .stale }
                if case .jump = plan, !matches { return .stale }
                recorded?.record(hash, at: entry.headerOffset)
                first = false
                if matches {
                    let header = ArchiveHandle.Header(
                        pathBytes: entry.nameBytes, entry: entry.archiveEntry, isSparse: false)
                    return .found(header, .walked(entry))
                }
            }
        }
    }

    /// Opens a fresh libarchive handle on the upstream (moved to `start`) and reads headers
    /// until one carries the name `wanted`, recording each header's position in `recorded`
    /// (when recording) and checking what `plan` expects at the first header.
    private func scanHeaders(
        for wanted: [UInt8], plan: TarHeaderCache.Plan, start: Int64, recording recorded: inout TarHeaderCache.Snapshot?
    ) throws(BlobStreamError) -> HeaderScan {
        let input = LibArchiveInput(reader: archive.reader, inflatingGzip: true, engine: inflateEngine)
        var first = true
        var opened = false
        do {
            let fresh = try ArchiveHandle(input: input)
            opened = true
            while try fresh.advance() {
                let (matches, hash) = fresh.withCurrentPath { path in
                    let name = UnsafeBufferPointer(rebasing: path[ArchiveMemberDataSource.normalizedBounds(path)])
                    return (name.elementsEqual(wanted), TarHeaderCache.hash(name))
                }
                if first, case .resume(let snapshot) = plan, hash != snapshot.lastHash || !fresh.isUncompressedTar {
                    return .stale
                }
                if case .jump = plan, !matches || !fresh.isUncompressedTar { return .stale }
                if recorded != nil {
                    if first, case .scan = plan, !fresh.isUncompressedTar { recorded = nil }
                    recorded?.record(hash, at: start + fresh.headerPosition)
                }
                first = false
                if matches { return .found(fresh.currentHeader(), .libarchive(fresh)) }
            }
            return .missing
        } catch {
            // No archive, or no header, where one was remembered.
            if first, start != 0, input.failure == nil { return .stale }
            throw archive.naming.translate(
                error, input: input, while: first && !opened ? "opening the archive" : "reading the headers")
        }
    }

    /// Moves the upstream to `start` (0: back to the start of the archive, to follow a hard
    /// link to a member stored earlier).
    private func moveUpstream(to start: Int64, followingLinks links: [String]) throws(BlobStreamError) {
        let moved = start != 0 ? (try? archive.reader.seek(to: start)) != nil : archive.reader.rewindArchive()
        if moved { return }
        if let link = links.last {
            throw archive.naming.makeError(
                .unsupported,
                "it is a hard link to '\(link)', stored earlier in the archive; reading it means going back to the start of the archive, which the upstream (\(type(of: archive.upstream))) cannot do"
            )
        }
        throw archive.naming.makeError(
            .sourceFailed, "the upstream (\(type(of: archive.upstream))) refused to move to offset \(start)")
    }
}

extension BlobUpstreamReader {
    /// Moves back to the start of the archive; false when the upstream cannot.
    func rewindArchive() -> Bool {
        source.offsetCapability != .none && (try? seek(to: 0)) != nil
    }
}
