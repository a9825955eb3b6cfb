// `gzip:` sources read through a seek-point index: beside a file (the matching sidecar), beside
// a remote object (its index object, one small request), or the one named.

import BlobStream
import BlobStreamGzip
import Foundation

extension BlobSources {
    /// Registers `gzip:` again so that it reads with the index `use` picks: over a `file:` URL the
    /// matching sidecar (`.implicit`, as `GzipSources` does) or the one named; over a remote object
    /// (`BlobRangeReading`: `s3:`, `http(s):`) its index object beside it (`URL.gzidx`, one small
    /// request) or the one named, checked against the object's size and strong ETag.
    func registerIndexedGzip(in registry: DataSourceRegistry, indexObjects: DataSourceRegistry) {
        let (use, engine, cache, key) = (indexes, inflate, indexCache, indexKey)
        if case .none = use { return }
        registry.register(scheme: GzipSources.scheme) { url, registry in
            let inner = BlobURL.removingScheme(url)
            guard !inner.isEmpty else {
                throw BlobStreamError(.malformedURL, "'\(url)' names no inner URL (expected gzip:<url>)")
            }
            let upstream = try registry.makeSource(url: inner)
            var index: GzipIndex?
            var unused: String?
            if BlobURL.scheme(of: inner)?.lowercased() == "file" {
                switch use {
                case .none: break
                case .beside:
                    // As GzipSources does, saying why a sidecar found was not used (--verbose).
                    if let path = try? BlobURL.path(ofFileURL: inner) {
                        switch Result(catching: { try GzipIndex.lookUp(forFileAtPath: path, key: key) }) {
                        case .success(.matching(let found)) where found.hasChunkCRC32s: index = found
                        case .success(.matching):
                            unused = "\(GzipIndex.sidecar(of: path)) has no chunk CRC-32s"
                        case .success(.unusable(let reason)): unused = reason
                        case .success(.absent): break
                        case .failure(let error): unused = String(describing: error)
                        }
                    }
                case .named(let indexPath, let acceptsUnchecked):
                    let path = try BlobURL.path(ofFileURL: inner)
                    if case .matching(let found) = try GzipIndex.lookUp(
                        forFileAtPath: path, indexPath: indexPath, key: key)
                    {
                        if !found.hasChunkCRC32s && !acceptsUnchecked {
                            throw BlobStreamError(
                                .unsupported,
                                "\(indexPath) is a foreign gzip index (no chunk CRC-32s): reads through it cannot be checked; adopt it (GzipIndex.adopt) and use the index that writes, or name it with acceptsUnchecked (IndexUse.named) to read through it UNVERIFIED"
                            )
                        }
                        index = found
                    }
                }
            } else if let object = upstream as? any BlobRangeReading {
                // An object on a store or a web server's file: its index beside it (KEY.gzidx,
                // one small request) or the one named (a path or a URL), checked against the
                // object's size and strong ETag.
                (index, unused) = try remoteIndex(
                    for: object, at: inner, use, registry: indexObjects, cache: cache, key: key)
            } else if case .named(let indexPath, _) = use {
                throw BlobStreamError(
                    .unsupported,
                    "\(inner): the index named (\(indexPath)) applies to gzip: sources over files and remote objects only"
                )
            }
            // Only a foreign index the user accepted by name gets here without chunk CRC-32s.
            let source = GzipDataSource(
                upstream: upstream, name: inner, index: index, engine: engine,
                acceptsUncheckedIndex: index.map { !$0.hasChunkCRC32s } ?? false)
            source.unusedIndexReason = unused
            return source
        }
    }
}

/// The index a `gzip:` source over a remote object reads with: the one named (any problem
/// thrown), else a matching `URL.gzidx` beside the object, else none; and why one found
/// beside it was not used.
private func remoteIndex(
    for object: any BlobRangeReading, at url: String, _ use: BlobSources.IndexUse, registry: DataSourceRegistry,
    cache: IndexCache?, key: IndexKey?
) throws(BlobStreamError) -> (GzipIndex?, unused: String?) {
    // With an index looked for, the read jumps (to a seek point) or decodes ranges in
    // parallel: the object's first answer need not bring a large block from its start,
    // and without an index a read from the start ramps up from it.
    if case .none = use {
    } else if BlobURL.scheme(of: url)?.lowercased() == "s3" {
        // An object on a store always carries an ETag: its first GET asks for its first
        // 64 KiB alone, not for the object from its start (sent, and relayed, until the
        // read jumped to its seek point and cancelled it).
        object.expectRead(0..<Int64(64 << 10))
    } else {
        object.expectRandomAccess()
    }
    object.open()
    switch use {
    case .none:
        return (nil, nil)
    case .beside:
        let found = try GzipIndex.lookUp(for: object, at: url, cache: cache, key: key) {
            try registry.makeSource(url: $0)
        }
        switch found {
        case .matching(let index): return (index, nil)
        case .unusable(let reason): return (nil, reason)
        case .absent: return (nil, nil)
        }
    case .named(let indexURL, let acceptsUnchecked):
        let found = try GzipIndex.lookUp(for: object, at: url, indexURL: indexURL, key: key) {
            try registry.makeSource(url: $0)
        }
        guard case .matching(let index) = found else { return (nil, nil) }
        if !index.hasChunkCRC32s && !acceptsUnchecked {
            throw BlobStreamError(
                .unsupported,
                "\(indexURL) is a foreign gzip index (no chunk CRC-32s): reads through it cannot be checked; name it with acceptsUnchecked (IndexUse.named) to read through it UNVERIFIED"
            )
        }
        return (index, nil)
    }
}
