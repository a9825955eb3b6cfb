import BlobStream
import Foundation

// Opening: from the upstream's open to the member's header (the first half of the state
// machine; `ArchiveMemberDataSource+Reading.swift` is the second).

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
        guard started, !closed, failure == nil, !state.isOpenCompleted, !locating else { return }
        if let error = upstream.error {
            fail(upstreamFailed(error, "failed to open"))
        } else if upstream.isOpenCompleted {
            locating = true
            finishOpen()
            locating = false
        }
    }

    /// The upstream is open: find the member, apply a pending offset, announce.
    func finishOpen() {
        do {
            try locate()
        } catch {
            if !closed { fail(error) }
            return
        }
        if let memberLength, target > memberLength {
            fail(makeError(.invalidOffset, "offset \(target) is past the end of the member (\(memberLength) bytes)"))
            return
        }
        if memberLength == 0, let slice {
            if let expected = slice.expectedCRC, expected != 0 {
                fail(makeError(slice.mismatchCode, "the member is empty, but its CRC-32 should be \(expected)"))
                return
            }
            state.isOpenCompleted = true
            if target == 0 { state.isAtEnd = true } else { state.hasBytesAvailable = true }
            return
        }
        if memberLength == 0 {
            // Confirm the end now (a zip CRC, a truncation), so that an empty member is at
            // its end as soon as it is open.
            if let problem = fetchBlock() {
                fail(problem)
                return
            }
            state.isOpenCompleted = true
            if isFinished && target == produced { state.isAtEnd = true } else { state.hasBytesAvailable = true }
            return
        }
        state.isOpenCompleted = true
        state.hasBytesAvailable = true
    }

    /// Opens a fresh libarchive handle and reads headers up to the member, following hard
    /// links. Resets the data cursor. Reading starts at offset 0 of the upstream, or, for an
    /// uncompressed tar searched before (see `TarHeaderCache`), at the member's header or
    /// where the last search stopped. The upstream is at offset 0 when it is called.
    func locate() throws(BlobStreamError) {
        slice = nil
        if !indexResolved {
            indexResolved = true
            activeIndex = try resolveIndex()
        }
        if let activeIndex, try locate(in: activeIndex) {
            handle?.free()
            handle = nil
            block = nil
            foundBy = .memberIndex
            return
        }
        if activeIndex == nil, try locateInCentralDirectory() {
            handle?.free()
            handle = nil
            block = nil
            foundBy = .zipCentralDirectory
            return
        }
        var wanted = self.wanted
        var links: [String] = []
        var atStart = true
        let identity =
            LibArchiveInput.canSeek(upstream) ? upstream.property(forKey: .blobContentIdentityKey) as? String : nil
        var useIndex = identity != nil
        // An uncompressed tar over a seekable upstream: its headers are walked here and the
        // member read where it is; libarchive reads what the walk leaves to it.
        var walkable =
            LibArchiveInput.canSeek(upstream) && TarHeaderWalker.startsWithTarHeader(reader, length: upstream.length!)
        if walkable { _ = try? reader.seek(to: 0) }
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
            var walked: TarWalkEntry? = nil
            if walkable {
                var walkRecord = recorded
                switch walkHeaders(for: wanted, plan: plan, start: start, recording: &walkRecord) {
                case .fallback:
                    walkable = false
                    if start != 0 { try moveUpstream(to: start, followingLinks: links) } else { _ = rewindUpstream() }
                    scan = try scanHeaders(for: wanted, plan: plan, start: start, recording: &recorded)
                case .scanned(let result, let entry):
                    recorded = walkRecord
                    scan = result
                    walked = entry
                }
            } else {
                scan = try scanHeaders(for: wanted, plan: plan, start: start, recording: &recorded)
            }
            let header: ArchiveHandle.Header
            switch scan {
            case .stale:
                TarHeaderCache.forget(identity: identity!)
                useIndex = false
                continue
            case .missing:
                if let recorded { TarHeaderCache.store(recorded, identity: identity!) }
                if let target = links.last {
                    throw makeError(.notFound, "it is a hard link to '\(target)', which is not in the archive")
                }
                throw makeError(.notFound, "no such member in the archive")
            case .found(let found):
                if let recorded { TarHeaderCache.store(recorded, identity: identity!) }
                header = found
            }
            guard let target = try accept(header) else {
                foundBy = walked != nil ? .tarHeaderWalk : .libarchive
                if let walked {
                    handle?.free()
                    handle = nil
                    slice = MemberSlice(
                        start: walked.dataOffset, length: walked.size, expectedCRC: nil, mismatchCode: .corrupt)
                }
                return
            }
            // A hard link without data of its own: read its target, stored earlier.
            links.append(target)
            guard links.count <= 16 else {
                throw makeError(
                    .corrupt, "hard links form a loop or a chain too long: \(links.joined(separator: " -> "))")
            }
            wanted = Self.normalized(Array(target.utf8))
            atStart = false
        }
    }

    /// What walking an uncompressed tar's headers found.
    enum WalkScan {
        /// What a pass found, and the walked entry when it is the member.
        case scanned(HeaderScan, TarWalkEntry?)
        /// The walk met something it leaves to libarchive (or a damaged header: libarchive,
        /// the reference, reports it).
        case fallback
    }

    /// Walks headers from `start` (the upstream's offset) until one carries the name
    /// `wanted`, recording positions as `scanHeaders` does; no libarchive handle is made.
    private func walkHeaders(
        for wanted: [UInt8], plan: TarHeaderCache.Plan, start: Int64, recording recorded: inout TarHeaderCache.Snapshot?
    ) -> WalkScan {
        var walker = TarHeaderWalker(reader: reader, length: upstream.length!, offset: start)
        var first = true
        while true {
            let step: TarHeaderWalker.Step
            do {
                step = try walker.next()
            } catch {
                return first && start != 0 ? .scanned(.stale, nil) : .fallback
            }
            switch step {
            case .unsupported: return .fallback
            case .end: return .scanned(first && start != 0 ? .stale : .missing, nil)
            case .entry(let entry):
                let name = Self.normalized(entry.nameBytes)
                let hash = name.withUnsafeBufferPointer(TarHeaderCache.hash)
                let matches = name == wanted
                if first, case .resume(let snapshot) = plan, hash != snapshot.lastHash { return .scanned(.stale, nil) }
                if case .jump = plan, !matches { return .scanned(.stale, nil) }
                recorded?.record(hash, at: entry.headerOffset)
                first = false
                if matches {
                    let header = ArchiveHandle.Header(
                        pathBytes: entry.nameBytes, entry: entry.archiveEntry, isSparse: false)
                    return .scanned(.found(header), entry)
                }
            }
        }
    }

    /// What a pass over the headers found.
    enum HeaderScan {
        /// The member's header (the handle is left there).
        case found(ArchiveHandle.Header)
        /// The archive ended without it.
        case missing
        /// A remembered position did not hold the expected header: search again from the start.
        case stale
    }

    /// Opens a fresh handle on the upstream (moved to `start`) and reads headers until one
    /// carries the name `wanted`, recording each header's position in `recorded` (when
    /// recording) and checking what `plan` expects at the first header.
    private func scanHeaders(
        for wanted: [UInt8], plan: TarHeaderCache.Plan, start: Int64, recording recorded: inout TarHeaderCache.Snapshot?
    ) throws(BlobStreamError) -> HeaderScan {
        handle?.free()
        handle = nil
        block = nil
        let input = LibArchiveInput(reader: reader, inflatingGzip: true, engine: inflateEngine)
        var first = true
        do {
            let fresh = try ArchiveHandle(input: input)
            handle = fresh
            while try fresh.advance() {
                let (matches, hash) = fresh.withCurrentPath { path in
                    let name = UnsafeBufferPointer(rebasing: path[Self.normalizedBounds(path)])
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
                if matches { return .found(fresh.currentHeader()) }
            }
            return .missing
        } catch {
            // No archive, or no header, where one was remembered.
            if first, start != 0, input.failure == nil { return .stale }
            throw translate(
                error, input: input, while: first && handle == nil ? "opening the archive" : "reading the headers")
        }
    }

    /// Moves the upstream to `start` (0: back to the start of the archive, to follow a hard
    /// link to a member stored earlier).
    private func moveUpstream(to start: Int64, followingLinks links: [String]) throws(BlobStreamError) {
        let moved = start != 0 ? (try? reader.seek(to: start)) != nil : rewindUpstream()
        if moved { return }
        if let link = links.last {
            throw makeError(
                .unsupported,
                "it is a hard link to '\(link)', stored earlier in the archive; reading it means going back to the start of the archive, which the upstream (\(type(of: upstream))) cannot do"
            )
        }
        throw makeError(.sourceFailed, "the upstream (\(type(of: upstream))) refused to move to offset \(start)")
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
            memberHeader = entry
            memberLength = entry.size
            isSparse = header.isSparse
            produced = 0
            dataEnded = false
            block = nil
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

    /// Moves the reader back to the start of the archive; false when the upstream cannot.
    func rewindUpstream() -> Bool {
        upstream.offsetCapability != .none && (try? reader.seek(to: 0)) != nil
    }
}
