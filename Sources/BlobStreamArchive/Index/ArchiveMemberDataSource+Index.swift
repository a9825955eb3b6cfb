import BlobStream
import BlobStreamCompression
import BlobStreamSystem
import Foundation

/// Which member index an `ArchiveMemberDataSource` uses (see `ArchiveIndex`).
public enum ArchiveIndexOption: Sendable {
    /// The default: for an archive read by path (or by a `file:` URL), `ARCHIVE.blobidx`
    /// beside it when it matches the archive; for an archive on a store or a web server
    /// (see `useIndex(_:besideArchiveAt:makeSource:)`), `URL.blobidx` beside it when it
    /// matches its size and strong ETag. One that does not match, or cannot be read, is
    /// ignored (never used): the member is then found by walking the headers.
    case automatic
    /// No index, not even a zip's central directory: libarchive reads a zip (and walks
    /// or reads a tar's headers) as without one.
    case none
    /// This index; refused (`.changed`) when it does not match the archive. Over an upstream
    /// with no path (see `useIndex(_:archivePath:)`) the modification time cannot be
    /// compared: the size and the sampled bytes are.
    case index(ArchiveIndex)
    /// The index in this file; refused when it cannot be read or does not match.
    case file(String)
}

extension ArchiveMemberDataSource {
    /// Makes a source for `member` of the archive file at `path`, using `index` (see
    /// `ArchiveIndexOption`; by default `ARCHIVE.blobidx` beside it when it matches).
    public convenience init(
        archive path: String, member: String, verification: ArchiveVerification = .wholeArchive,
        index: ArchiveIndexOption
    ) {
        self.init(archive: path, member: member, verification: verification)
        indexOption = index
    }

    /// Lets the source use an index of the archive file at `path` (its upstream's bytes),
    /// as `option` says. Call before `open()`.
    public func useIndex(_ option: ArchiveIndexOption, archivePath path: String?) {
        lock.lock()
        defer { lock.unlock() }
        indexOption = option
        archivePath = path
    }

    /// Lets the source use an index of the archive at `url` on a store or a web server (its
    /// upstream, a `BlobRangeReading` source), as `option` says: with `.automatic`, the
    /// index object beside it (`ArchiveIndex.sidecar(of:)`, one small request
    /// through a source `makeSource` makes) when it matches the archive's size and strong
    /// ETag (with `cache`, a copy kept there is used with no request, and the one found
    /// beside the archive is kept). An index named (`.index`, `.file`) that was made for such an object is checked
    /// against its ETag; one made for a file, against its size and sampled bytes. Call
    /// before `open()`.
    public func useIndex(
        _ option: ArchiveIndexOption, besideArchiveAt url: String, cache: IndexCache? = nil,
        makeSource: @escaping @Sendable (String) throws -> any BlobDataSource
    ) {
        lock.lock()
        defer { lock.unlock() }
        indexOption = option
        indexObjects = (url, cache, makeSource)
    }

    /// Sets the inflate engine (see `InflateEngine`) of the gzip layer of a tar.gz and
    /// of members inflated here (a tar.gz member read through an index, a zip deflate member
    /// read through an index): by default ISA-L when it loads, else zlib; `.isal` where ISA-L
    /// is unavailable fails the open with `.unsupported`. Call before `open()`.
    public func useInflateEngine(_ engine: InflateEngine) {
        lock.lock()
        defer { lock.unlock() }
        inflateEngine = engine
    }

    /// Over an archive on a store (`s3://`) with `.automatic` and no index cache: asks
    /// for the index object beside it now (its source made and opened), so that the index's
    /// answer and the archive's first answer come in parallel instead of one after the other.
    /// With a cache, a kept copy is looked for first (it needs the archive's ETag) and no
    /// request is made for the index when one is there. Called by `open()`, lock held.
    func requestIndexEarly() {
        // Only on a store (s3://), whose objects always carry an ETag: a web server's file may
        // have no strong one, and then no request but the archive's one GET is made at all.
        guard case .automatic = indexOption, archivePath == nil, let indexObjects, indexObjects.cache == nil,
            upstream is any BlobRangeReading, BlobURL.scheme(of: indexObjects.url)?.lowercased() == "s3"
        else { return }
        let url = ArchiveIndex.sidecar(of: indexObjects.url)
        // One that cannot be made is made again at the search, which keeps its error.
        guard let made = try? indexObjects.makeSource(url) else { return }
        // Its head and member table in the first answer, no more of it held; a tar.gz
        // index's gzip record, at its end, asked for beside that answer.
        (made as? any BlobRangeReading)?.expectRead(0..<Int64(ArchiveIndex.leadingReadLength))
        (made as? any BlobRangeReading)?.expectEnd(SourceIndexBytes.tailLength)
        made.open()
        earlyIndexSource = (url, made)
    }

    /// The index this source uses, resolved at its first search (nil: none).
    func resolveIndex() throws(BlobStreamError) -> ArchiveIndex? {
        switch indexOption {
        case .none: return nil
        case .automatic:
            if archivePath == nil, let indexObjects, let object = upstream as? any BlobRangeReading {
                let early = earlyIndexSource
                earlyIndexSource = nil
                guard LibArchiveInput.canSeek(upstream) else {
                    early?.source.close()
                    return nil
                }
                // The index object asked for at open() stands in for the first source made
                // of its URL.
                var waiting = early
                let makeSource: (String) throws -> any BlobDataSource = { url in
                    if let made = waiting, made.url == url {
                        waiting = nil
                        return made.source
                    }
                    return try indexObjects.makeSource(url)
                }
                defer { waiting?.source.close() }
                return use {
                    () throws(BlobStreamError) in
                    try ArchiveIndex.lookUp(
                        for: object, at: indexObjects.url, cache: indexObjects.cache, makeSource: makeSource)
                }
            }
            guard let archivePath, LibArchiveInput.canSeek(upstream) else { return nil }
            return use { () throws(BlobStreamError) in try ArchiveIndex.lookUp(forFileAtPath: archivePath) }
        case .index(let index):
            try requireMatch(index, "the index given")
            return index
        case .file(let path):
            let index: ArchiveIndex
            do {
                index = try ArchiveIndex.read(from: path)
            } catch {
                let own = error as? BlobStreamError
                throw makeError(own?.code ?? .sourceFailed, "cannot use the index named", cause: error)
            }
            try requireMatch(index, "index '\(path)'")
            return index
        }
    }

    /// The index a lookup found when it matches; else nil, and why an index found was not
    /// used kept for the note (`unusedIndex`).
    private func use(_ lookUp: () throws(BlobStreamError) -> ArchiveIndex.LookUp) -> ArchiveIndex? {
        switch Result(catching: lookUp) {
        case .success(.matching(let index)): return index
        case .success(.absent): return nil
        case .success(.unusable(let reason)):
            unusedIndex = reason
            return nil
        case .failure(let error):
            unusedIndex = error.message
            return nil
        }
    }

    private func requireMatch(_ index: ArchiveIndex, _ what: String) throws(BlobStreamError) {
        guard LibArchiveInput.canSeek(upstream) else {
            let limit = (upstream.property(forKey: .blobOffsetLimitKey) as? String).map { ": " + $0 } ?? ""
            throw makeError(.unsupported, "\(what) cannot be used: the upstream cannot seek\(limit)")
        }
        if let mismatch = try indexMismatch(index) {
            throw makeError(.changed, "\(what) does not match the archive: \(mismatch)")
        }
    }

    /// What differs between the index's identity and the archive now; nil when nothing.
    private func indexMismatch(_ index: ArchiveIndex) throws(BlobStreamError) -> String? {
        // An index of an object: its size and ETag against the object's, no sampled reads.
        if let tag = index.identity.entityTag {
            guard let object = upstream as? any BlobRangeReading, let now = try object.contentIdentity(),
                let nowTag = now.entityTag
            else { return "it was made for an object with ETag \(tag); the archive has no strong ETag" }
            if now.size != index.identity.size {
                return "the archive is \(now.size) bytes long; the index was made for \(index.identity.size) bytes"
            }
            return nowTag == tag ? nil : "it was made for ETag \(tag), the archive's is \(nowTag)"
        }
        let modified =
            (upstream as? ArchiveFileSource)?.modified
            ?? archivePath.flatMap { try? FileStatus(path: $0) }?.modified
        let access = ArchiveOffsetReader(reader: reader, length: upstream.length ?? -1, name: archiveName)
        defer { _ = try? reader.seek(to: 0) }
        return try access.mismatch(with: index.identity, modified: modified)
    }

    /// Finds the member in `index` (following hard links) and sets the slice to read (a zip
    /// member compressed with deflate is inflated from its compressed bytes); false when
    /// libarchive must read it (a zip member encrypted or compressed otherwise).
    func locate(in index: ArchiveIndex) throws(BlobStreamError) -> Bool {
        var wanted = self.wanted
        var links: [String] = []
        var chain: [ArchiveIndex.Member] = []
        while true {
            guard let member = index.member(named: wanted) else {
                if let link = links.last {
                    throw makeError(.notFound, "it is a hard link to '\(link)', which is not in the archive")
                }
                throw makeError(.notFound, "no such member in the archive (as its index lists it)")
            }
            let deflated = index.format == .zip && member.compressionMethod == 8
            if index.format == .zip, (member.compressionMethod != 0 && !deflated) || member.isEncrypted { return false }
            let header = ArchiveHandle.Header(pathBytes: member.nameBytes, entry: member.entry, isSparse: false)
            chain.append(member)
            guard let target = try accept(header) else {
                slice = MemberSlice(
                    start: member.dataOffset, length: member.size, expectedCRC: member.crc32,
                    mismatchCode: index.format == .tar ? .changed : .corrupt)
                if deflated {
                    slice?.inflation = try MemberInflation(
                        compressedLength: member.compressedSize ?? 0, name: messagePrefix, engine: inflateEngine)
                }
                if index.format == .tarGzip {
                    guard let gzipIndex = index.gzipIndex else {
                        throw makeError(.corrupt, "the tar.gz index holds no gzip seek points")
                    }
                    slice?.mismatchCode = .corrupt
                    slice?.decompression = MemberGzipReading(
                        reader: reader, index: gzipIndex, name: archiveName, engine: inflateEngine, size: member.size)
                }
                if index.format == .tar || index.format == .zip {
                    // The member's headers and bytes in one request, and nothing read ahead
                    // past them.
                    reader.expectRead(member.headerOffset..<member.dataOffset + (member.compressedSize ?? member.size))
                }
                if index.format == .tarXz {
                    guard let path = archivePath ?? (upstream as? ArchiveFileSource)?.path else {
                        throw makeError(.unsupported, "a tar.xz read through its index needs the archive's path")
                    }
                    slice?.mismatchCode = .corrupt
                    do {
                        slice?.decompression = try MemberXzReading(path: path)
                    } catch {
                        throw makeError(
                            error.code, "cannot read the blocks of the tar.xz: \(error.message)", cause: error)
                    }
                }
                // Before any byte is served: the archive's own headers must say what the
                // index says (see `checkHeaders(of:format:)`).
                try checkHeaders(of: chain, format: index.format)
                return true
            }
            links.append(target)
            guard links.count <= 16 else {
                throw makeError(
                    .corrupt, "hard links form a loop or a chain too long: \(links.joined(separator: " -> "))")
            }
            wanted = Self.normalized(Array(target.utf8))
        }
    }
}
