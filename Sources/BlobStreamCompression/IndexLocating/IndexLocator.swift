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
    ///     beside the source is kept there (read whole once; a failure to keep it does not
    ///     fail the lookup).
    ///   - makeSource: makes the source of an index URL (a registry's `makeSource`).
    public static func lookUp(
        for source: any BlobRangeReading, at url: String, indexURL: String? = nil, cache: IndexCache? = nil,
        makeSource: (String) throws -> any BlobDataSource
    ) throws(BlobStreamError) -> IndexLookUp<Self> {
        if let indexURL {
            let index = try read(named: indexURL, makeSource: makeSource)
            try index.check(against: try source.contentIdentity(), sourceName: url, indexName: indexURL)
            return .matching(index)
        }
        if let cache, let index = try keptCopy(in: cache, for: source, at: url) { return .matching(index) }
        let sidecar = sidecar(of: url)
        let found = Result { () throws(BlobStreamError) in try read(named: sidecar, makeSource: makeSource) }
        guard let now = try source.contentIdentity() else {
            return .unusable(reason: "\(url) has no strong ETag: no index is used")
        }
        let judged = judge(found, as: sidecar, for: url, now: now)
        if case .matching = judged, let cache {
            _ = cache.keepCopy(
                of: sidecar, forSourceAt: url, serverOrigin: source.serverOrigin, identity: now, kind: kind,
                makeSource: makeSource)
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
    public static func lookUp(forFileAtPath path: String, indexPath: String? = nil) throws(BlobStreamError)
        -> IndexLookUp<Self>
    {
        if let indexPath {
            let index = try read(indexFileAt: indexPath)
            try index.check(againstFileAtPath: path, indexName: indexPath)
            return .matching(index)
        }
        let sidecar = sidecar(of: path)
        guard FileManager.default.fileExists(atPath: sidecar) else { return .absent }
        // Only a regular file is sampled: opening a FIFO to check it would wait for a writer.
        guard case .success(let status) = FileStatus.at(path), status.isRegular else {
            return .unusable(reason: "\(path) is not a regular file: its sidecar \(sidecar) is not used")
        }
        let found = Result { () throws(BlobStreamError) in try read(indexFileAt: sidecar) }
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
    private static func keptCopy(in cache: IndexCache, for source: any BlobRangeReading, at url: String)
        throws(BlobStreamError) -> Self?
    {
        guard let reader = Self.self as? any KeptIndexFileReading.Type, let now = try source.contentIdentity(),
            now.entityTag != nil,
            let kept = cache.openEntry(forSourceAt: url, serverOrigin: source.serverOrigin, identity: now, kind: kind),
            let index = (try? reader.read(keptFile: kept.file, path: kept.path)) as? Self,
            index.mismatch(with: now) == nil
        else { return nil }
        return index
    }
}
