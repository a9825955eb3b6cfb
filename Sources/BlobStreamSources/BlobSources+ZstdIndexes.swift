// `zstd:` sources read through a frame index (`ZstdFrameIndex`): beside a file (the matching
// `FILE.zst.zstidx`), beside a remote object (`KEY.zstidx`, one small request, or the copy
// kept in the index cache), or the one named.

import BlobStream
import BlobStreamZstd
import Foundation

extension BlobSources {
    /// Registers `zstd:` again so that a file in many frames is entered through the frame
    /// index `indexes` picks: over a `file:` URL the matching sidecar or the one named; over a
    /// remote object (`BlobRangeReading`) the one named, or its index object beside it (or
    /// kept in the cache), looked for at the first move (`findFrameIndex`), each checked
    /// against the object's size and strong ETag. A seekable file
    /// needs none (its own table serves); without an index a file decodes from its start.
    func registerIndexedZstd(in registry: DataSourceRegistry, indexObjects: DataSourceRegistry) {
        let (use, cache, windowLog, key) = (indexes, indexCache, zstdWindowLog, indexKey)
        if case .none = use { return }
        registry.register(scheme: ZstdSources.scheme) { url, registry in
            let inner = BlobURL.removingScheme(url)
            guard !inner.isEmpty else {
                throw BlobStreamError(.malformedURL, "'\(url)' names no inner URL (expected zstd:<url>)")
            }
            let upstream = try registry.makeSource(url: inner)
            var found: IndexLookUp<ZstdFrameIndex> = .absent
            var named: String?
            if case .named(let path, _) = use { named = path }
            if named == nil, let object = upstream as? any BlobRangeReading,
                BlobURL.scheme(of: inner)?.lowercased() != "file"
            {
                // Looked for at the first move only: a read from the start asks for nothing more,
                // and one that starts with a move asks for the object's end beside its start.
                let find = { () throws(BlobStreamError) -> IndexLookUp<ZstdFrameIndex> in
                    (try? ZstdFrameIndex.lookUp(for: object, at: inner, cache: cache, key: key) {
                        try indexObjects.makeSource(url: $0)
                    }) ?? .absent
                }
                return ZstdDataSource(upstream: upstream, name: inner, windowLog: windowLog, findFrameIndex: find)
            }
            if BlobURL.scheme(of: inner)?.lowercased() == "file" {
                let path = try BlobURL.path(ofFileURL: inner)
                if let named {
                    found = try ZstdFrameIndex.lookUp(forFileAtPath: path, indexPath: named, key: key)
                } else {
                    found = (try? ZstdFrameIndex.lookUp(forFileAtPath: path, key: key)) ?? .absent
                }
            } else if let named, let object = upstream as? any BlobRangeReading {
                object.open()
                found = try ZstdFrameIndex.lookUp(for: object, at: inner, indexURL: named, key: key) {
                    try indexObjects.makeSource(url: $0)
                }
            } else if let named {
                throw BlobStreamError(
                    .unsupported,
                    "\(inner): the index named (\(named)) applies to zstd: sources over files and remote objects only")
            }
            var index: ZstdFrameIndex?
            var unused: String?
            switch found {
            case .matching(let matching): index = matching
            case .unusable(let reason): unused = reason
            case .absent: break
            }
            let source = ZstdDataSource(upstream: upstream, name: inner, windowLog: windowLog, frameIndex: index)
            source.unusedIndexReason = unused
            return source
        }
    }
}
