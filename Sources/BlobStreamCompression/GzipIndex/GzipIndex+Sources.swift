import BlobStream
import BlobStreamSystem
import Foundation

// Indexes of gzip content that any source holds (an object on a store, a web server's file
// with a strong ETag), found beside it as an object of their own (`KEY.gzidx`) or named.
extension GzipIndex {
    /// Where an implicit index of the content at `url` lives: beside it, `URL.gzidx` (for an
    /// object on a store, the object `KEY.gzidx` in the same bucket).
    public static func sidecarURL(forSourceAt url: String) -> String { IndexCache.Kind.gzip.sidecar(of: url) }

    /// Checks that this index describes content whose identity is `now` (what the source
    /// answers: for a remote object, its size and strong ETag).
    ///
    /// - Throws: `.changed` naming both when the identity differs (size, ETag, modification
    ///   time or a sample); for a foreign index (no identity), when the compressed size
    ///   differs; `.unsupported` when the source cannot say what it holds (no strong ETag).
    public func check(against now: BlobContentIdentity?, sourceName: String, indexName: String)
        throws(BlobStreamError)
    {
        let refusal = { (why: String) in
            BlobStreamError(
                .changed,
                "the gzip index \(indexName) does not match \(sourceName): \(why); build a new one (blobstream index \(sourceName))"
            )
        }
        guard let now else {
            throw BlobStreamError(
                .unsupported,
                "\(sourceName) has no strong ETag, so no index can be checked against it (another request could read another version)"
            )
        }
        guard let identity else {
            guard compressedSize == now.size else {
                throw refusal("it indexes \(compressedSize) compressed bytes, the object has \(now.size)")
            }
            return
        }
        if identity.size != now.size {
            throw refusal("it was made for \(identity.size) bytes, the object has \(now.size)")
        }
        if identity.entityTag != now.entityTag {
            throw refusal(
                "it was made for ETag \(identity.entityTag ?? "(none: a file's index)"), the object's is \(now.entityTag ?? "(none)")"
            )
        }
        if identity.entityTag == nil, identity.modified != now.modified || identity.sampleCRC32s != now.sampleCRC32s {
            throw refusal("the content changed after the index was made")
        }
        if compressedSize != now.size {
            throw refusal("it indexes \(compressedSize) compressed bytes, the object has \(now.size)")
        }
    }

    /// Finds the index to use for the gzip content `source` holds, `url` being where it is.
    ///
    /// - With `indexURL` (the user named an index: a path, or a URL `makeSource` opens): it
    ///   is read and checked, and any problem is thrown (`.notFound`, `.corrupt`, `.changed`
    ///   naming both); a foreign GZIDX is accepted when its compressed size matches.
    /// - Without: `sidecarURL(forSourceAt: url)` is asked for (one small request); it is used
    ///   only when it carries BlobStream's identity and that matches; no such object is
    ///   `.absent`, any other problem `.unusable` (never used).
    ///
    /// Index objects are read by range (`init(readingFrom:name:)`): make them with a small
    /// block in `makeSource` (the first answer brings the header and the point table).
    ///
    /// - Parameters:
    ///   - source: the gzip content, open.
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
    ) throws(BlobStreamError) -> LookUp {
        // The index is asked for before the source's identity is waited for: the source's
        // first answer (its open) and the index's come in parallel.
        if let indexURL {
            let index = try read(named: indexURL, makeSource: makeSource)
            try index.check(against: try source.contentIdentity(), sourceName: url, indexName: indexURL)
            return .matching(index)
        }
        // A copy kept in the cache for this version of the object: no request for the index.
        // Only a regular file there is opened, without waiting (a FIFO is passed by).
        if let cache, let now = try source.contentIdentity(), now.entityTag != nil,
            let kept = cache.openEntry(
                forSourceAt: url, serverOrigin: source.serverOrigin, identity: now, kind: .gzip),
            let size = try? kept.file.size(),
            let index = try? read(from: kept.file, offset: 0, length: size),
            (try? index.check(against: now, sourceName: url, indexName: kept.path)) != nil
        {
            return .matching(index)
        }
        let sidecar = sidecarURL(forSourceAt: url)
        let found: Result<GzipIndex, BlobStreamError>
        do {
            found = .success(try read(named: sidecar, makeSource: makeSource))
        } catch {
            found = .failure(error)
        }
        let now = try source.contentIdentity()
        guard now != nil else { return .unusable(reason: "\(url) has no strong ETag: no index is used") }
        switch found {
        case .failure(let error) where error.code == .notFound:
            return .absent
        case .failure(let error):
            return .unusable(reason: error.message)
        case .success(let index):
            guard index.identity != nil else {
                return .unusable(reason: "\(sidecar) is a foreign GZIDX index (no identity record); name it to use it")
            }
            do {
                try index.check(against: now, sourceName: url, indexName: sidecar)
            } catch {
                return .unusable(reason: error.message)
            }
            if let cache, let now {
                _ = cache.keepCopy(
                    of: sidecar, forSourceAt: url, serverOrigin: source.serverOrigin, identity: now, kind: .gzip,
                    makeSource: makeSource)
            }
            return .matching(index)
        }
    }

    /// The index at `url`: a file (a path or `file:` URL) read from the file, anything else
    /// through a source `makeSource` makes, by range.
    static func read(named url: String, makeSource: (String) throws -> any BlobDataSource) throws(BlobStreamError)
        -> GzipIndex
    {
        let scheme = BlobURL.scheme(of: url)?.lowercased()
        if scheme == nil || scheme == "file" {
            var path = url
            if scheme != nil {
                do {
                    path = try BlobURL.path(ofFileURL: url)
                } catch {
                    throw BlobStreamError(.malformedURL, "gzip index \(url): \(error)", cause: error)
                }
            }
            return try read(fromPath: path)
        }
        let made: any BlobDataSource
        do {
            made = try makeSource(url)
        } catch {
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed, "gzip index \(url): \(error)", cause: error)
        }
        guard let object = made as? any BlobRangeReading else {
            made.close()
            throw BlobStreamError(.unsupported, "gzip index \(url): its source cannot be read by range")
        }
        // Its head and point table in the first answer (512 KiB: about 29,000 points, a
        // 116 GiB stream at the default spacing), no more of it held; its record, at its end,
        // asked for beside that answer.
        object.expectRead(0..<Int64(512 << 10))
        object.expectEnd(SourceIndexBytes.tailLength)
        object.open()
        return try GzipIndex(readingFrom: object, name: url)
    }
}
