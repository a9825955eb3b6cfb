import BlobStream
import BlobStreamCompression
import BlobStreamSystem
import Foundation

// Member indexes of archives that any source holds (an object on a store, a web server's
// file with a strong ETag): built by reading the object through its source, stored beside
// it as an object of their own (`KEY.blobidx`), read by range, and checked against the
// object's size and strong ETag.

extension ArchiveIndex {
    /// Where an implicit index of the archive at `url` lives: beside it, `URL.blobidx` (for
    /// an object on a store, the object `KEY.blobidx` in the same bucket).
    public static func sidecarURL(forArchiveAt url: String) -> String { IndexCache.Kind.archive.sidecar(of: url) }

    /// How much of an index object the first request brings: the header and the member table
    /// of about 20,000 members, so that a read through it starts with one request.
    static let sourcePrefixLength = 2 << 20

    /// Reads the index an object holds by range: its header and member table (one request,
    /// most often; their CRC-32 checked), and for a tar.gz the gzip index's point table,
    /// each window left there until a decode needs it.
    ///
    /// - Parameters:
    ///   - source: the index's bytes, open; the index takes it over and closes it once
    ///     decoded (a tar.gz's when the last copy of its gzip index is released).
    ///   - name: how errors name the index.
    /// - Throws: what `init(decoding:name:)` throws; the source's error, naming `name`.
    public init(readingFrom source: any BlobRangeReading, name: String) throws {
        if source.length == nil { _ = try source.contentIdentity() } // waits for the first answer
        guard let length = source.length else {
            source.close()
            throw BlobStreamError(.unsupported, "\(name): the index's length is unknown, so it cannot be read by range")
        }
        let store = SourceIndexBytes(source, label: "archive index '\(name)'", prefixLength: Self.sourcePrefixLength)
        var reader = ArchiveIndexSourceBytes(store: store, length: Int(length))
        try self.init(decodingReader: &reader, name: name)
    }

    /// What `lookUp(for:at:indexURL:makeSource:)` found.
    public typealias LookUp = IndexLookUp<ArchiveIndex>

    /// Finds the member index of the archive `source` holds, `url` being where it is.
    ///
    /// - With `indexURL` (the user named one: a path, or a URL `makeSource` opens): it is
    ///   read and checked, and any problem is thrown (`.notFound`, `.corrupt`, `.changed`
    ///   naming both).
    /// - Without: `sidecarURL(forArchiveAt: url)` is asked for (one small request); it is
    ///   used only when its identity matches the archive's (size and strong ETag); no such
    ///   object is `.absent`, any other problem `.unusable` (never used).
    ///
    /// - Parameters:
    ///   - source: the archive, open.
    ///   - url: its URL, for the sidecar's and for messages.
    ///   - indexURL: the index the user named, if any.
    ///   - cache: where indexes are kept on this machine, if anywhere: without `indexURL`, a
    ///     copy kept there for this version of the object (its size and ETag) is used with no
    ///     request for the index, and a matching index found beside the object is kept there
    ///     (read whole once; a failure to keep it does not fail the lookup).
    ///   - makeSource: makes the source of an index URL (a registry's `makeSource`).
    public static func lookUp(
        for source: any BlobRangeReading, at url: String, indexURL: String? = nil, cache: IndexCache? = nil,
        makeSource: (String) throws -> any BlobDataSource
    ) throws -> LookUp {
        // The index is asked for before the archive's identity is waited for: the archive's
        // first answer (its open) and the index's come in parallel.
        if let indexURL {
            let index = try read(named: indexURL, makeSource: makeSource)
            try index.check(against: try source.contentIdentity(), archiveName: url, indexName: indexURL)
            return .matching(index)
        }
        // A copy kept in the cache for this version of the object: no request for the index.
        // Only a regular file there is opened, without waiting (a FIFO is passed by).
        if let cache, let now = try source.contentIdentity(), now.entityTag != nil,
            let kept = cache.openEntry(
                forSourceAt: url, serverOrigin: source.serverOrigin, identity: now, kind: .archive),
            let index = try? ArchiveIndex(
                decodingFile: ArchiveIndexFileBytes(file: kept.file, path: kept.path), name: kept.path),
            (try? index.check(against: now, archiveName: url, indexName: kept.path)) != nil
        {
            return .matching(index)
        }
        let sidecar = sidecarURL(forArchiveAt: url)
        let found: Result<ArchiveIndex, any Error>
        do {
            found = .success(try read(named: sidecar, makeSource: makeSource))
        } catch {
            found = .failure(error)
        }
        let now = try source.contentIdentity()
        guard now != nil else { return .unusable(reason: "\(url) has no strong ETag: no index is used") }
        switch found {
        case .failure(let error as BlobStreamError) where error.code == .notFound:
            return .absent
        case .failure(let error):
            return .unusable(reason: String(describing: error))
        case .success(let index):
            do {
                try index.check(against: now, archiveName: url, indexName: sidecar)
            } catch {
                return .unusable(reason: String(describing: error))
            }
            if let cache, let now {
                _ = cache.keepCopy(
                    of: sidecar, forSourceAt: url, serverOrigin: source.serverOrigin, identity: now, kind: .archive,
                    makeSource: makeSource)
            }
            return .matching(index)
        }
    }

    /// Checks that this index describes the archive whose identity is `now` (a remote
    /// object's size and strong ETag).
    ///
    /// - Throws: `.changed` naming both when the size or the ETag differs, or when the index
    ///   was made for a file (no ETag: read it by path with `ArchiveIndexOption.file`, whose
    ///   sampled bytes are compared); `.unsupported` when the archive has no strong ETag.
    public func check(against now: BlobContentIdentity?, archiveName: String, indexName: String) throws {
        guard let now, now.entityTag != nil else {
            throw BlobStreamError(
                .unsupported,
                "\(archiveName) has no strong ETag, so no index can be checked against it (another request could read another version)"
            )
        }
        let refusal = { (why: String) in
            BlobStreamError(
                .changed,
                "the archive index \(indexName) does not match \(archiveName): \(why); build a new one (blobstream index \(archiveName))"
            )
        }
        guard let tag = identity.entityTag else {
            throw refusal("it was made for a file, not for an object with an ETag")
        }
        if identity.size != now.size {
            throw refusal("it was made for \(identity.size) bytes, the object has \(now.size)")
        }
        if tag != now.entityTag {
            throw refusal("it was made for ETag \(tag), the object's is \(now.entityTag ?? "(none)")")
        }
    }

    /// The index at `url`: a file (a path or `file:` URL) read from the file, anything else
    /// through a source `makeSource` makes, by range.
    static func read(named url: String, makeSource: (String) throws -> any BlobDataSource) throws -> ArchiveIndex {
        let scheme = BlobURL.scheme(of: url)?.lowercased()
        if scheme == nil || scheme == "file" {
            return try read(from: scheme == nil ? url : BlobURL.path(ofFileURL: url))
        }
        let made: any BlobDataSource
        do {
            made = try makeSource(url)
        } catch {
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed, "archive index \(url): \(error)", cause: error)
        }
        guard let object = made as? any BlobRangeReading else {
            made.close()
            throw BlobStreamError(.unsupported, "archive index \(url): its source cannot be read by range")
        }
        // Its head and member table in the first answer, no more of it held; its record, at
        // its end, asked for beside that answer.
        object.expectRead(0..<Int64(sourcePrefixLength))
        object.expectEnd(SourceIndexBytes.tailLength)
        object.open()
        return try ArchiveIndex(readingFrom: object, name: url)
    }

    /// Indexes the archive a source holds (an uncompressed tar, a zip or a tar.gz on a
    /// store or a web server), reading it through sources `makeSource` makes (each new and
    /// not opened: one to find the format and walk a tar or a zip, one more to inflate a
    /// tar.gz). The index records the object's size and strong ETag, and each source is
    /// pinned to that ETag, so a change during the pass fails it.
    ///
    /// - Parameters:
    ///   - name: the archive's URL, for messages.
    ///   - makeSource: makes a new source of the archive: `BlobRangeReading` (a ranged
    ///     source of `BlobStreamHTTPClient` or `BlobStreamS3`).
    ///   - gzipSpacing: for a tar.gz, the least uncompressed distance between seek points.
    ///   - engine: for a tar.gz, the inflater of the pass.
    /// - Throws: `.unsupported` when the source cannot be read by range or has no strong
    ///   ETag, or for other formats (a tar.xz among them); what `build(archiveAt:)` throws
    ///   otherwise, naming `name`.
    public static func build(
        archiveNamed name: String, makeSource: () throws -> any BlobDataSource,
        gzipSpacing: Int = GzipIndex.defaultSpacing, engine: InflateEngine = .automatic
    ) throws -> ArchiveIndex {
        let made = try makeSource()
        guard let object = made as? any BlobRangeReading else {
            made.close()
            throw BlobStreamError(.unsupported, "archive '\(name)': its source cannot be read by range")
        }
        let reader = LibArchiveInput.makeReader(object)
        defer { reader.close() }
        reader.open()
        guard let identity = try object.contentIdentity(), identity.entityTag != nil, let length = object.length else {
            throw BlobStreamError(
                .unsupported,
                "archive '\(name)': the server sends no strong ETag, so no index could be checked against it later")
        }
        let archive = ArchiveOffsetReader(reader: reader, length: length, name: name)
        switch layout(of: archive) {
        case .gzip:
            return try buildTarGzip(
                source: makeSource(), name: name, identity: identity, spacing: gzipSpacing, engine: engine)
        case .xz: break
        case .tarOrZip:
            if let index = try tarOrZipIndex(archive, identity: identity) { return index }
        }
        throw BlobStreamError(
            .unsupported, "archive '\(name)': only tar, tar.gz and zip archives on a store can be indexed")
    }
}
