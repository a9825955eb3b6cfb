import BlobStream
import BlobStreamCompression
import BlobStreamSystem
import Foundation

// Member indexes of archives that any source holds (an object on a store, a web server's
// file with a strong ETag): built by reading the object through its source, stored beside
// it as an object of their own (`KEY.blobidx`), read by range, and checked against the
// object's size and strong ETag.

extension ArchiveIndex: LocatableIndex, KeptIndexFileReading {
    /// What `lookUp(forFileAtPath:indexPath:)` and `lookUp(for:at:indexURL:cache:makeSource:)`
    /// found.
    public typealias LookUp = IndexLookUp<ArchiveIndex>

    /// `.archive`: sidecars and cache entries end in `.blobidx`.
    public static var kind: IndexCache.Kind { .archive }

    /// 2 MiB: the header and the member table of about 20,000 members in the first answer,
    /// so that a read through it starts with one request.
    public static var leadingReadLength: Int { 2 << 20 }

    /// `identity`: every member index records the archive it was made for.
    public var madeFor: BlobContentIdentity? { identity }

    /// nil: a member index records the archive's size in its identity only.
    public var indexedSourceSize: Int64? { nil }

    /// Reads the index file at `path`; see `read(from:)`.
    public static func read(indexFileAt path: String) throws(BlobStreamError) -> ArchiveIndex {
        try typed(path) { try read(from: path) }
    }

    package static func read(keptFile: PositionalFile, path: String) throws(BlobStreamError) -> ArchiveIndex {
        try typed(path) {
            try ArchiveIndex(decodingFile: ArchiveIndexFileBytes(file: keptFile, path: path), name: path)
        }
    }

    package static func decode(wholeIndex bytes: [UInt8], name: String) throws(BlobStreamError) -> ArchiveIndex {
        var bytes = bytes
        return try typed(name) { try ArchiveIndex(decodingBytes: &bytes, name: name) }
    }

    /// Reads the index an object holds by range: its header and member table (one request,
    /// most often; their CRC-32 checked), and for a tar.gz the gzip index's point table,
    /// each window left there until a decode needs it.
    ///
    /// - Parameters:
    ///   - source: the index's bytes, open; the index takes it over and closes it once
    ///     decoded (a tar.gz's when the last copy of its gzip index is released).
    ///   - name: how errors name the index.
    /// - Throws: what `init(decoding:name:)` throws; the source's error, naming `name`.
    public init(readingFrom source: any BlobRangeReading, name: String) throws(BlobStreamError) {
        if source.length == nil { _ = try source.contentIdentity() } // waits for the first answer
        guard let length = source.length else {
            source.close()
            throw BlobStreamError(.unsupported, "\(name): the index's length is unknown, so it cannot be read by range")
        }
        let store = SourceIndexBytes(source, label: "archive index '\(name)'", prefixLength: Self.leadingReadLength)
        let unsealed = try IndexSeal.unsealedLength(of: store, length: length)
        var reader = ArchiveIndexSourceBytes(store: store, length: Int(unsealed))
        self = try Self.typed(name) { try Self(decodingReader: &reader, name: name) }
    }

    /// `body`'s result; an error that is not a `BlobStreamError` becomes one naming `name`.
    static func typed<T>(_ name: String, _ body: () throws -> T) throws(BlobStreamError) -> T {
        do {
            return try body()
        } catch let error as BlobStreamError {
            throw error
        } catch {
            throw BlobStreamError(.sourceFailed, "archive index '\(name)': \(error)", cause: error)
        }
    }

    /// Indexes the archive a source holds (an uncompressed tar, a zip, a tar.gz or a tar.zst on a
    /// store or a web server), reading it through sources `makeSource` makes (each new and
    /// not opened: one to find the format and walk a tar or a zip, one more to decompress a
    /// tar.gz or a tar.zst). The index records the object's size and strong ETag, and each source is
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
        case .zstd: return try buildTarZstd(source: makeSource(), name: name, identity: identity)
        case .xz: break
        case .tarOrZip:
            if let index = try tarOrZipIndex(archive, identity: identity) { return index }
        }
        throw BlobStreamError(
            .unsupported, "archive '\(name)': only tar, tar.gz, tar.zst and zip archives on a store can be indexed")
    }
}
