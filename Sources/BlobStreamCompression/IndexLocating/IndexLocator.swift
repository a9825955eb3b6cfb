import BlobStream
import BlobStreamSystem
import Foundation

// The one index locator: named, then kept in the cache, then beside the source, then none,
// for every kind of index (`LocatableIndex`), over any source read by range or a file.
extension LocatableIndex {
    /// Finds the index to use for the content `source` holds, `url` being where it is.
    ///
    /// - With `indexURL` (the user named an index: a path, or a URL `makeSource` opens): it
    ///   is read and checked, and any problem is thrown (`.notFound`, `.corrupt`, `.changed`
    ///   naming both); a foreign index (no identity record) is accepted when its own record
    ///   of the source's size matches.
    /// - Without: a copy kept in `cache` for this version of the source (its size and strong
    ///   ETag) is used with no request for the index; else `sidecar(of: url)` is asked for
    ///   (one small request), and used only when it carries BlobStream's identity and that
    ///   matches. No such object is `.absent`, any other problem `.unusable` (never used).
    ///
    /// The index is asked for before the source's identity is waited for: the source's first
    /// answer (its open) and the index's come in parallel.
    ///
    /// - Parameters:
    ///   - source: the content, open.
    ///   - url: its URL, for the sidecar's and for messages.
    ///   - indexURL: the index the user named, if any.
    ///   - cache: where indexes are kept on this machine, if anywhere; a matching index found
    ///     beside the source is kept there (read whole once, in one request, and decoded from
    ///     those bytes; a failure to keep it does not fail the lookup).
    ///   - key: the key indexes must be sealed with (`IndexSeal`); nil: none is checked (a
    ///     seal is set aside). With a key, every index is read whole and used only when its
    ///     seal verifies: one named that does not is an error (`.unsupported` unsealed,
    ///     `.corrupt` a seal that does not verify), a kept copy that does not is removed from
    ///     the cache, and one beside the source that does not is `.unusable` (never used).
    ///   - makeSource: makes the source of an index URL (a registry's `makeSource`).
    public static func lookUp(
        for source: any BlobRangeReading, at url: String, indexURL: String? = nil, cache: IndexCache? = nil,
        key: IndexKey? = nil, makeSource: (String) throws -> any BlobDataSource
    ) throws(BlobStreamError) -> IndexLookUp<Self> {
        if let indexURL {
            let index = try read(named: indexURL, key: key, makeSource: makeSource)
            try index.check(against: try source.contentIdentity(), sourceName: url, indexName: indexURL)
            return .matching(index)
        }
        if let cache, let index = try keptCopy(in: cache, for: source, at: url, key: key) { return .matching(index) }
        let sidecar = sidecar(of: url)
        // With a key, the index is read whole (its seal covers every byte), and the bytes
        // checked are the ones kept. With a cache, it is read whole too (one request), decoded
        // from those bytes and kept as read: read by pages, then whole again to be kept, it
        // was asked for three times.
        var sealedBytes: [UInt8]?
        let found = Result { () throws(BlobStreamError) in
            guard let key else {
                guard cache != nil, let decoder = Self.self as? any KeptIndexFileReading.Type else {
                    return try read(named: sidecar, makeSource: makeSource)
                }
                let bytes = try wholeBytes(named: sidecar, makeSource: makeSource)
                guard let index = try decoder.decode(wholeIndex: IndexSeal.withoutSeal(bytes), name: sidecar) as? Self
                else { throw BlobStreamError(.unsupported, "the \(kind.noun) \(sidecar) cannot be read whole") }
                sealedBytes = bytes
                return index
            }
            let bytes = try wholeBytes(named: sidecar, makeSource: makeSource)
            sealedBytes = bytes
            return try authenticated(bytes, name: sidecar, key: key)
        }
        guard let now = try source.contentIdentity() else {
            return .unusable(reason: "\(url) has no strong ETag: no index is used")
        }
        let judged = judge(found, as: sidecar, for: url, now: now)
        if case .matching = judged, let cache {
            if let sealedBytes {
                _ = try? cache.keep(
                    sealedBytes, forSourceAt: url, serverOrigin: source.serverOrigin, identity: now, kind: kind)
            } else {
                _ = cache.keepCopy(
                    of: sidecar, forSourceAt: url, serverOrigin: source.serverOrigin, identity: now, kind: kind,
                    makeSource: makeSource)
            }
        }
        return judged
    }

    /// Finds the index to use for the file at `path`.
    ///
    /// - With `indexPath` (the user named an index): it is read and checked, and any
    ///   problem is thrown (`.corrupt` for a bad file, `.changed` naming both when it does
    ///   not match); a foreign index is accepted when its own record of the size matches.
    /// - Without: `sidecar(of: path)` is used only when it carries BlobStream's identity and
    ///   that matches, and the file is a regular file (a FIFO is never opened to be
    ///   checked); otherwise the answer is `.unusable` (rebuild) or `.absent`.
    /// - With `key`, an index is read whole and used only when its seal verifies with the key
    ///   (`IndexSeal`): one named that does not is an error, a sidecar that does not is
    ///   `.unusable`. Without, a seal is set aside.
    public static func lookUp(forFileAtPath path: String, indexPath: String? = nil, key: IndexKey? = nil)
        throws(BlobStreamError) -> IndexLookUp<Self>
    {
        if let indexPath {
            let index: Self
            if let key {
                index = try authenticated(readWholeFile(indexPath), name: indexPath, key: key)
            } else {
                index = try read(indexFileAt: indexPath)
            }
            try index.check(againstFileAtPath: path, indexName: indexPath)
            return .matching(index)
        }
        let sidecar = sidecar(of: path)
        guard FileManager.default.fileExists(atPath: sidecar) else { return .absent }
        // Only a regular file is sampled: opening a FIFO to check it would wait for a writer.
        guard case .success(let status) = FileStatus.at(path), status.isRegular else {
            return .unusable(reason: "\(path) is not a regular file: its sidecar \(sidecar) is not used")
        }
        let found = Result { () throws(BlobStreamError) in
            guard let key else { return try read(indexFileAt: sidecar) }
            return try authenticated(readWholeFile(sidecar), name: sidecar, key: key)
        }
        do {
            return judge(found, as: sidecar, for: path, now: try BlobContentIdentity(ofFileAtPath: path))
        } catch {
            return .unusable(reason: error.message)
        }
    }

    /// What an index found beside a source (not named) is worth: only one with BlobStream's
    /// identity, matching the source's now, is used.
    private static func judge(
        _ found: Result<Self, BlobStreamError>, as sidecar: String, for source: String, now: BlobContentIdentity
    ) -> IndexLookUp<Self> {
        switch found {
        case .failure(let error) where error.code == .notFound:
            return .absent
        case .failure(let error):
            return .unusable(reason: error.message)
        case .success(let index):
            guard index.madeFor != nil else {
                return .unusable(reason: "\(sidecar) is a foreign \(kind.noun) (no identity record); name it to use it")
            }
            do {
                try index.check(against: now, sourceName: source, indexName: sidecar)
            } catch {
                return .unusable(reason: error.message)
            }
            return .matching(index)
        }
    }

    /// The copy kept in `cache` for this version of the source, when one is there and
    /// matches. Only a regular file there is opened, without waiting (a FIFO is passed by).
    /// With `key`, it is read whole and its seal checked: a copy whose seal does not verify
    /// (or that has none) is removed from the cache.
    private static func keptCopy(
        in cache: IndexCache, for source: any BlobRangeReading, at url: String, key: IndexKey?
    ) throws(BlobStreamError) -> Self? {
        guard let reader = Self.self as? any KeptIndexFileReading.Type, let now = try source.contentIdentity(),
            now.entityTag != nil,
            let kept = cache.openEntry(forSourceAt: url, serverOrigin: source.serverOrigin, identity: now, kind: kind)
        else { return nil }
        if let key {
            let checked = Result { () throws(BlobStreamError) in
                try authenticated(wholeBytes(of: kept.file, name: kept.path), name: kept.path, key: key)
            }
            guard case .success(let index) = checked else {
                if case .failure(let error) = checked, error.code == .unsupported || error.code == .corrupt {
                    try? FileManager.default.removeItem(atPath: kept.path)
                }
                return nil
            }
            return index.mismatch(with: now) == nil ? index : nil
        }
        guard let index = (try? reader.read(keptFile: kept.file, path: kept.path)) as? Self,
            index.mismatch(with: now) == nil
        else { return nil }
        return index
    }
}
