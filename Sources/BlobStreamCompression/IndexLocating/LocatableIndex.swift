import BlobStream
import BlobStreamSystem
import Foundation

/// An index format that the one index locator finds and checks for a source: a gzip index
/// (`GzipIndex`) or an archive's member index (`ArchiveIndex`).
///
/// Every kind is found the same way (`lookUp(for:at:indexURL:cache:makeSource:)` for a source
/// read by range, `lookUp(forFileAtPath:indexPath:)` for a file): the index the user named,
/// then a copy kept in the `IndexCache`, then the sidecar beside the source
/// (`sidecar(of:)`), then none. Every kind is checked against the source's identity by one
/// rule (`check(against:sourceName:indexName:)`), and every error is a `BlobStreamError`.
public protocol LocatableIndex: Sendable {
    /// Its kind: the extension of its sidecar (`.gzidx`, `.blobidx`) and of its cache entries.
    static var kind: IndexCache.Kind { get }
    /// How many leading bytes of an index object its first request brings (its header and
    /// its table, so that a read through it starts with one request).
    static var leadingReadLength: Int { get }
    /// The identity of the source it was made for (size, modification time and sampled
    /// CRC-32s for a file; size and strong ETag for an object); nil for a foreign index
    /// (indexed_gzip's GZIDX), which is used only when named.
    var madeFor: BlobContentIdentity? { get }
    /// The source's size as the index itself records it, checked too when known (a gzip
    /// index's compressed size).
    var indexedSourceSize: Int64? { get }
    /// Reads the index file at `path`.
    static func read(indexFileAt path: String) throws(BlobStreamError) -> Self
    /// Reads an index by range from `source` (open), which it takes over.
    init(readingFrom source: any BlobRangeReading, name: String) throws(BlobStreamError)
}

/// Reads an index from a file the cache opened (regular, not followed through a link), or
/// from its whole bytes (an index whose seal was checked), for the kinds this package defines.
package protocol KeptIndexFileReading {
    static func read(keptFile: PositionalFile, path: String) throws(BlobStreamError) -> Self
    /// Decodes an index from all of its bytes (without its seal), held in memory.
    static func decode(wholeIndex bytes: [UInt8], name: String) throws(BlobStreamError) -> Self
}

extension LocatableIndex {
    /// Where an implicit index of the source at `pathOrURL` lives: beside it, its path or URL
    /// followed by the kind's extension (`photos.tar.gz.blobidx`; for an object on a store,
    /// the object `KEY.gzidx` in the same bucket). The one naming rule of every sidecar.
    public static func sidecar(of pathOrURL: String) -> String { kind.sidecar(of: pathOrURL) }

    /// What differs between the source this index was made for and the source whose
    /// identity is `now`; nil when nothing does.
    public func mismatch(with now: BlobContentIdentity) -> String? {
        if let indexed = indexedSourceSize, indexed != now.size {
            return "it indexes \(indexed) compressed bytes, the source has \(now.size)"
        }
        guard let made = madeFor else { return nil } // a foreign index: its size is all it says
        if made.size != now.size {
            return "it was made for \(made.size) bytes, the source has \(now.size)"
        }
        switch (made.entityTag, now.entityTag) {
        case (nil, nil):
            if made.modified != now.modified { return "the file was modified after the index was made" }
            if made.sampleCRC32s != now.sampleCRC32s {
                let i =
                    zip(made.sampleCRC32s, now.sampleCRC32s).enumerated().first { $0.element.0 != $0.element.1 }?
                    .offset ?? 0
                let ranges = BlobContentIdentity.sampleRanges(forSize: now.size)
                let range = ranges[min(i, ranges.count - 1)]
                return "the bytes \(range.lowerBound)..<\(range.upperBound) differ (sampled bytes)"
            }
            return nil
        case (nil, let tag?):
            return "it was made for a file, not for an object with an ETag (\(tag))"
        case (let tag?, nil):
            return "it was made for an object with ETag \(tag); the source has no strong ETag"
        case (let made?, let now?):
            return made == now ? nil : "it was made for ETag \(made), the object's is \(now)"
        }
    }

    /// Checks that this index describes the source whose identity is `now` (what the source
    /// answers: a file's size, time and samples; an object's size and strong ETag).
    ///
    /// - Throws: `.changed` naming both and what differs; `.unsupported` when the source
    ///   cannot say what it holds (`now` is nil: no strong ETag).
    public func check(against now: BlobContentIdentity?, sourceName: String, indexName: String)
        throws(BlobStreamError)
    {
        guard let now else {
            throw BlobStreamError(
                .unsupported,
                "\(sourceName) has no strong ETag, so no index can be checked against it (another request could read another version)"
            )
        }
        if let why = mismatch(with: now) {
            throw BlobStreamError(
                .changed,
                "the \(Self.kind.noun) \(indexName) does not match \(sourceName): \(why); build a new one"
            )
        }
    }

    /// Checks that this index describes the file at `path` as it is now (its size,
    /// modification time and sampled bytes).
    ///
    /// - Throws: `.changed` naming both and what differs; the file's own errors.
    public func check(againstFileAtPath path: String, indexName: String? = nil) throws(BlobStreamError) {
        try check(
            against: try BlobContentIdentity(ofFileAtPath: path), sourceName: path,
            indexName: indexName ?? Self.sidecar(of: path))
    }

    /// The index at `url`: a file (a path or `file:` URL) read from the file, anything else
    /// through a source `makeSource` makes, read by range. With `key`, it is read whole and
    /// used only when its seal verifies with the key (`IndexSeal`); a seal is ignored without.
    package static func read(
        named url: String, key: IndexKey? = nil, makeSource: (String) throws -> any BlobDataSource
    ) throws(BlobStreamError) -> Self {
        if let key {
            return try authenticated(wholeBytes(named: url, makeSource: makeSource), name: url, key: key)
        }
        if let path = try localPath(of: url) { return try read(indexFileAt: path) }
        let object = try rangeSource(of: url, makeSource: makeSource)
        // Its head and table in the first answer, no more of it held. Its end (a GZIDX's
        // record, a member index's gzip record, the seal) is asked for once that answer
        // gives the length, and only when it did not bring it (`SourceIndexBytes`): an index
        // that fits in the first answer is one request.
        object.expectRead(0..<Int64(leadingReadLength))
        object.open()
        return try Self(readingFrom: object, name: url)
    }
}

// Sealed indexes (`IndexSeal`): with a key, an index is read whole, its seal checked, and
// only then decoded from memory.
extension LocatableIndex {
    /// The index in `bytes` (all of an index file or object), used only when its seal
    /// verifies with `key` for what it records (its kind, the identity of the source it was
    /// made for, every byte).
    ///
    /// - Throws: `BlobStreamError` naming `name`: `.unsupported` when it carries no seal (or
    ///   its kind cannot be decoded from memory), `.corrupt` when the seal does not verify or
    ///   the index is damaged.
    package static func authenticated(_ bytes: [UInt8], name: String, key: IndexKey) throws(BlobStreamError) -> Self {
        guard IndexSeal.isSealed(bytes) else {
            try IndexSeal.check(bytes, name: name, kind: kind, madeFor: nil, key: key) // throws: no seal
            throw BlobStreamError(.unsupported, "the \(kind.noun) \(name) is not sealed")
        }
        guard let decoder = Self.self as? any KeptIndexFileReading.Type,
            let index = try decoder.decode(wholeIndex: IndexSeal.withoutSeal(bytes), name: name) as? Self
        else {
            throw BlobStreamError(.unsupported, "the \(kind.noun) \(name) cannot be read whole to check its seal")
        }
        try IndexSeal.check(bytes, name: name, kind: kind, madeFor: index.madeFor, key: key)
        return index
    }

    /// All the bytes of the index at `url`: a file (a path or `file:` URL), or an object a
    /// source `makeSource` makes reads (one request more when it is longer than its first
    /// answer).
    package static func wholeBytes(named url: String, makeSource: (String) throws -> any BlobDataSource)
        throws(BlobStreamError) -> [UInt8]
    {
        if let path = try localPath(of: url) { return try readWholeFile(path) }
        let object = try rangeSource(of: url, makeSource: makeSource)
        defer { object.close() }
        object.open()
        _ = try object.contentIdentity() // waits for the first answer (the length)
        guard let length = object.length else {
            throw BlobStreamError(.unsupported, "\(kind.noun) \(url): its length is unknown")
        }
        guard length <= maximumSealedLength else {
            throw BlobStreamError(
                .unsupported, "\(kind.noun) \(url) is \(length) bytes, more than an index read whole may be")
        }
        guard length > 0 else { return [] }
        do {
            let data = try object.bytes(at: [0..<length]).first ?? Data()
            return [UInt8](data)
        } catch {
            throw BlobStreamError(error.code, "\(kind.noun) \(url): \(error.message)", cause: error)
        }
    }

    /// The path of the index `url` names when it is a file (a path or a `file:` URL); nil for
    /// anything else.
    static func localPath(of url: String) throws(BlobStreamError) -> String? {
        switch BlobURL.scheme(of: url)?.lowercased() {
        case nil: return url
        case "file":
            do {
                return try BlobURL.path(ofFileURL: url)
            } catch {
                throw BlobStreamError(.malformedURL, "\(kind.noun) \(url): \(error)", cause: error)
            }
        default: return nil
        }
    }

    /// The source `makeSource` makes for the index object at `url` (not open), which must read
    /// by range.
    static func rangeSource(of url: String, makeSource: (String) throws -> any BlobDataSource)
        throws(BlobStreamError) -> any BlobRangeReading
    {
        let made: any BlobDataSource
        do {
            made = try makeSource(url)
        } catch {
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed, "\(kind.noun) \(url): \(error)", cause: error)
        }
        guard let object = made as? any BlobRangeReading else {
            made.close()
            throw BlobStreamError(.unsupported, "\(kind.noun) \(url): its source cannot be read by range")
        }
        return object
    }

    /// All the bytes of the index file at `path`.
    package static func readWholeFile(_ path: String) throws(BlobStreamError) -> [UInt8] {
        try wholeBytes(of: PositionalFile(path: path, label: path), name: path)
    }

    /// All the bytes of the index file `file` (`name` for messages).
    package static func wholeBytes(of file: PositionalFile, name: String) throws(BlobStreamError) -> [UInt8] {
        let size = try file.size()
        guard size <= maximumSealedLength else {
            throw BlobStreamError(
                .unsupported, "\(kind.noun) \(name) is \(size) bytes, more than an index read whole may be")
        }
        return try file.bytes(count: Int(size), at: 0, what: kind.noun)
    }

    /// The longest index read whole to check its seal: 4 GiB (a gzip index of about 500 GiB
    /// of output at the default spacing).
    package static var maximumSealedLength: Int64 { 4 << 30 }
}
