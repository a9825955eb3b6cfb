import BlobStream
import BlobStreamCompression
import BlobStreamSystem
import Foundation

// The member index way: the index this source uses (`ArchiveIndexOption`), resolved at the
// first search (over a store, asked for early, at `open()`), then the member looked up in it
// and read where it is (`MemberSliceReader`), its headers checked first
// (`IndexedMemberReader+HeaderCheck.swift`).

/// Finds a member through a member index (`ArchiveIndex`): owns the index in use, the early
/// request for the one beside a remote archive, and why one found was not used. Not
/// thread-safe: used under the source's lock.
final class IndexedMemberReader {
    /// The archive read and the member asked for.
    let archive: MemberInArchive
    /// The index object beside a remote archive, asked for at `open()` so that its answer
    /// and the archive's first answer come in parallel; taken by the first search.
    private var earlyIndexSource: (url: String, source: any BlobDataSource)?
    /// The index in use, once resolved at the first search.
    private(set) var index: ArchiveIndex?
    private var resolved = false
    /// Why an index found beside the archive was not used (`unusedIndexReason`).
    private(set) var unusedReason: String?

    init(archive: MemberInArchive) {
        self.archive = archive
    }

    /// The source closed: an index object asked for early is closed.
    func close() {
        earlyIndexSource?.source.close()
        earlyIndexSource = nil
    }

    /// Resolves the index at the first search (a failure is not tried again), then finds
    /// the member in it (see `locate(in:options:accept:)`). Nil without an index, or when
    /// libarchive must read the member.
    func locate(options: ArchiveMemberOptions, accept: (ArchiveHandle.Header) throws(BlobStreamError) -> String?)
        throws(BlobStreamError) -> MemberSlice?
    {
        if !resolved {
            resolved = true
            index = try resolveIndex(options)
        }
        guard let index else { return nil }
        return try locate(in: index, options: options, accept: accept)
    }

    /// Over an archive on a store (`s3://`, whose objects always carry an ETag) with
    /// `.automatic`: the archive's first GET asks for its first 64 KiB alone (its identity,
    /// a tar's first header, a zip's first local header), not for the archive from its start
    /// (megabytes sent before the read jumped to its index's member, and cancelled). A read
    /// without an index (a tar walked) goes on by blocks. Called by `open()` before the
    /// archive is opened, lock held.
    func expectFirstBytes(_ options: ArchiveMemberOptions) {
        guard case .automatic = options.index, options.archivePath == nil, let indexObjects = options.indexObjects,
            let object = archive.upstream as? any BlobRangeReading,
            BlobURL.scheme(of: indexObjects.url)?.lowercased() == "s3"
        else { return }
        object.expectRead(0..<Int64(64 << 10))
    }

    /// Over an archive on a store (`s3://`) with `.automatic` and no index cache: asks
    /// for the index object beside it now (its source made and opened), so that the index's
    /// answer and the archive's first answer come in parallel instead of one after the other.
    /// With a cache, a kept copy is looked for first (it needs the archive's ETag) and no
    /// request is made for the index when one is there. Called by `open()`, lock held.
    func requestIndexEarly(_ options: ArchiveMemberOptions) {
        // Only on a store (s3://), whose objects always carry an ETag: a web server's file may
        // have no strong one, and then no request but the archive's one GET is made at all.
        guard case .automatic = options.index, options.archivePath == nil, let indexObjects = options.indexObjects,
            indexObjects.cache == nil,
            archive.upstream is any BlobRangeReading, BlobURL.scheme(of: indexObjects.url)?.lowercased() == "s3"
        else { return }
        let url = ArchiveIndex.sidecar(of: indexObjects.url)
        // One that cannot be made is made again at the search, which keeps its error.
        guard let made = try? indexObjects.makeSource(url) else { return }
        // Its head and member table in the first answer, no more of it held. The end (a
        // tar.gz index's gzip record, the seal) is asked for once the first answer gives the
        // length, and only when that answer did not bring it (`SourceIndexBytes`): an index
        // of up to 2 MiB is one request.
        (made as? any BlobRangeReading)?.expectRead(0..<Int64(ArchiveIndex.leadingReadLength))
        made.open()
        earlyIndexSource = (url, made)
    }

    /// The index this source uses, resolved at its first search (nil: none).
    private func resolveIndex(_ options: ArchiveMemberOptions) throws(BlobStreamError) -> ArchiveIndex? {
        switch options.index {
        case .none: return nil
        case .automatic:
            if options.archivePath == nil, let indexObjects = options.indexObjects,
                let object = archive.upstream as? any BlobRangeReading
            {
                let early = earlyIndexSource
                earlyIndexSource = nil
                guard LibArchiveInput.canSeek(archive.upstream) else {
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
                        for: object, at: indexObjects.url, cache: indexObjects.cache, key: options.indexKey,
                        makeSource: makeSource)
                }
            }
            guard let archivePath = options.archivePath, LibArchiveInput.canSeek(archive.upstream) else { return nil }
            return use { () throws(BlobStreamError) in
                try ArchiveIndex.lookUp(forFileAtPath: archivePath, key: options.indexKey)
            }
        case .index(let index):
            try requireMatch(index, "the index given", options)
            return index
        case .file(let path):
            let index: ArchiveIndex
            do {
                if let key = options.indexKey {
                    index = try ArchiveIndex.authenticated(ArchiveIndex.readWholeFile(path), name: path, key: key)
                } else {
                    index = try ArchiveIndex.read(from: path)
                }
            } catch {
                let own = error as? BlobStreamError
                throw archive.naming.makeError(own?.code ?? .sourceFailed, "cannot use the index named", cause: error)
            }
            try requireMatch(index, "index '\(path)'", options)
            return index
        }
    }

    /// The index a lookup found when it matches; else nil, and why an index found was not
    /// used kept for the note (`unusedReason`).
    private func use(_ lookUp: () throws(BlobStreamError) -> ArchiveIndex.LookUp) -> ArchiveIndex? {
        switch Result(catching: lookUp) {
        case .success(.matching(let index)): return index
        case .success(.absent): return nil
        case .success(.unusable(let reason)):
            unusedReason = reason
            return nil
        case .failure(let error):
            unusedReason = error.message
            return nil
        }
    }

    private func requireMatch(_ index: ArchiveIndex, _ what: String, _ options: ArchiveMemberOptions)
        throws(BlobStreamError)
    {
        guard LibArchiveInput.canSeek(archive.upstream) else {
            let limit = (archive.upstream.property(forKey: .blobOffsetLimitKey) as? String).map { ": " + $0 } ?? ""
            throw archive.naming.makeError(.unsupported, "\(what) cannot be used: the upstream cannot seek\(limit)")
        }
        if let mismatch = try indexMismatch(index, archivePath: options.archivePath) {
            throw archive.naming.makeError(.changed, "\(what) does not match the archive: \(mismatch)")
        }
    }

    /// What differs between the index's identity and the archive now; nil when nothing.
    private func indexMismatch(_ index: ArchiveIndex, archivePath: String?) throws(BlobStreamError) -> String? {
        // An index of an object: its size and ETag against the object's, no sampled reads.
        if let tag = index.identity.entityTag {
            guard let object = archive.upstream as? any BlobRangeReading, let now = try object.contentIdentity(),
                let nowTag = now.entityTag
            else { return "it was made for an object with ETag \(tag); the archive has no strong ETag" }
            if now.size != index.identity.size {
                return "the archive is \(now.size) bytes long; the index was made for \(index.identity.size) bytes"
            }
            return nowTag == tag ? nil : "it was made for ETag \(tag), the archive's is \(nowTag)"
        }
        let modified =
            (archive.upstream as? ArchiveFileSource)?.modified
            ?? archivePath.flatMap { try? FileStatus(path: $0) }?.modified
        let access = ArchiveOffsetReader(
            reader: archive.reader, length: archive.upstream.length ?? -1, name: archive.naming.archiveName)
        defer { _ = try? archive.reader.seek(to: 0) }
        return try access.mismatch(with: index.identity, modified: modified)
    }

    /// Finds the member in `index` (following hard links, each header handed to `accept`)
    /// and returns the slice to read (a zip member compressed with deflate is inflated from
    /// its compressed bytes); nil when libarchive must read it (a zip member encrypted or
    /// compressed otherwise).
    private func locate(
        in index: ArchiveIndex, options: ArchiveMemberOptions,
        accept: (ArchiveHandle.Header) throws(BlobStreamError) -> String?
    ) throws(BlobStreamError) -> MemberSlice? {
        var wanted = archive.naming.wanted
        var links: [String] = []
        var chain: [ArchiveIndex.Member] = []
        while true {
            guard let member = index.member(named: wanted) else {
                if let link = links.last {
                    throw archive.naming.makeError(
                        .notFound, "it is a hard link to '\(link)', which is not in the archive")
                }
                throw archive.naming.makeError(.notFound, "no such member in the archive (as its index lists it)")
            }
            let deflated = index.format == .zip && member.compressionMethod == 8
            if index.format == .zip, (member.compressionMethod != 0 && !deflated) || member.isEncrypted { return nil }
            let header = ArchiveHandle.Header(pathBytes: member.nameBytes, entry: member.entry, isSparse: false)
            chain.append(member)
            guard let target = try accept(header) else {
                var slice = MemberSlice(
                    start: member.dataOffset, length: member.size, expectedCRC: member.crc32,
                    mismatchCode: index.format == .tar ? .changed : .corrupt)
                if deflated {
                    slice.inflation = try MemberInflation(
                        compressedLength: member.compressedSize ?? 0, name: archive.naming.messagePrefix,
                        engine: options.inflateEngine)
                }
                slice.decompression = try decompression(of: member, in: index, options: options)
                // Before any byte is served: the archive's own headers must say what the
                // index says (see `checkHeaders(of:format:)`).
                try checkHeaders(of: chain, format: index.format, decompression: slice.decompression)
                return slice
            }
            links.append(target)
            guard links.count <= 16 else {
                throw archive.naming.makeError(
                    .corrupt, "hard links form a loop or a chain too long: \(links.joined(separator: " -> "))")
            }
            wanted = ArchiveMemberDataSource.normalized(Array(target.utf8))
        }
    }

    /// How the member's bytes are decoded out of a compressed archive's stream (tar.gz,
    /// tar.zst, tar.xz); nil for a tar or a zip, whose members stand in the archive's own
    /// bytes (their headers and bytes are then asked for in one request, and nothing past).
    private func decompression(
        of member: ArchiveIndex.Member, in index: ArchiveIndex, options: ArchiveMemberOptions
    ) throws(BlobStreamError) -> (any MemberDecompression)? {
        switch index.format {
        case .tar, .zip:
            archive.reader.expectRead(member.headerOffset..<member.dataOffset + (member.compressedSize ?? member.size))
            return nil
        case .tarGzip:
            guard let gzipIndex = index.gzipIndex else {
                throw archive.naming.makeError(.corrupt, "the tar.gz index holds no gzip seek points")
            }
            return MemberGzipReading(
                reader: archive.reader, index: gzipIndex, name: archive.naming.archiveName,
                engine: options.inflateEngine, size: member.size)
        case .tarZstd:
            guard let frames = index.zstdFrames else {
                throw archive.naming.makeError(.corrupt, "the tar.zst index holds no zstd frames")
            }
            return MemberZstdReading(
                reader: archive.reader, table: frames, name: archive.naming.archiveName,
                end: member.dataOffset + member.size, size: member.size)
        case .tarXz:
            guard let path = options.archivePath ?? (archive.upstream as? ArchiveFileSource)?.path else {
                throw archive.naming.makeError(.unsupported, "a tar.xz read through its index needs the archive's path")
            }
            do {
                return try MemberXzReading(path: path)
            } catch {
                throw archive.naming.makeError(
                    error.code, "cannot read the blocks of the tar.xz: \(error.message)", cause: error)
            }
        }
    }
}
