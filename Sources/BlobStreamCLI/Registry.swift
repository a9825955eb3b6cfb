// The registry every command reads through: the schemes of the modules the tool links.

import BlobStream
import BlobStreamArchive
import BlobStreamAssets
import BlobStreamFiles
import BlobStreamGzip
import Foundation
import Synchronization

/// The registry the tool reads through: every scheme of the modules it links. Asset URLs
/// are resolved by the photo library given with `--library`; `gzip:` sources, the gzip layer
/// of `archive:` sources and tar.gz members read through an index inflate with `inflate`
/// (`--inflate`).
/// Remote schemes (`http`, `https`) come from the program through `RemoteSchemes`, with
/// `caBundle` (`--ca-bundle`) as an extra trust root, and `s3` (`--endpoint-url`, `--region`,
/// `--profile`) for `s3:` sources. `gzipIndexes` says which seek-point index `gzip:` sources
/// over files use (by default the matching sidecar beside the file); `indexCache`, where
/// indexes of remote objects are kept on this machine (`--index-cache`), if anywhere.
package func makeRegistry(
    library: String? = nil, skipArchiveVerification: Bool = false, caBundle: String? = nil,
    inflate: InflateEngine = .automatic, gzipIndexes: GzipIndexUse = .implicit, indexCache: IndexCache? = nil,
    s3: S3SourceSettings = S3SourceSettings()
) -> DataSourceRegistry {
    let registry = DataSourceRegistry()
    RemoteSchemes.register(in: registry, caBundle: caBundle, s3: s3, reads: .content)
    FileSources.register(in: registry)
    GzipSources.register(in: registry, engine: inflate, usesSidecarIndex: gzipIndexes == .implicit)
    // Index objects (KEY.gzidx beside a remote object) are read by small ranges: the point
    // table first, each window when a decode needs it.
    let indexObjects = DataSourceRegistry()
    RemoteSchemes.register(in: indexObjects, caBundle: caBundle, s3: s3, reads: .indexObjects)
    let gzipIndexObjects = DataSourceRegistry()
    RemoteSchemes.register(in: gzipIndexObjects, caBundle: caBundle, s3: s3, reads: .gzipIndexObjects)
    registerIndexedGzip(in: registry, gzipIndexes, engine: inflate, indexObjects: gzipIndexObjects, cache: indexCache)
    // An archive on a store: its member index beside it (KEY.blobidx), unless --index none.
    // --index names the member index of archive: sources (a path or a URL, for a local or a
    // remote archive), as it names the seek-point index of gzip: sources.
    var namedIndex: String?
    if case .named(let index, _) = gzipIndexes { namedIndex = index }
    ArchiveSources.register(
        in: registry, verification: skipArchiveVerification ? .memberOnly : .wholeArchive, engine: inflate,
        indexObjects: indexObjects, lookForIndexObjects: gzipIndexes != .none, indexCache: indexCache,
        namedIndex: namedIndex)
    if let library {
        AssetSources.register(in: registry, library: DirectoryAssetLibrary(root: URL(fileURLWithPath: library)))
    } else {
        registry.register(scheme: AssetSources.scheme) { url, _ in
            throw BlobStreamError(.notFound, "\(url): asset URLs need the photo library: pass --library DIR")
        }
    }
    return registry
}

/// The schemes a program adds to every registry the tool makes: `blobstream` adds `http`,
/// `https` (BlobStreamHTTPClient) and `s3` (BlobStreamS3), which this module does not link,
/// so that `blobstream-urlsession` stays free of AsyncHTTPClient (there, remote URLs are an
/// unknown scheme).
package enum RemoteSchemes {
    /// Registers schemes in a registry; `caBundle` is the `--ca-bundle` given, if any, `s3`
    /// the S3 options given.
    package typealias Registrar =
        @Sendable (
            _ registry: DataSourceRegistry, _ caBundle: String?, _ s3: S3SourceSettings, _ reads: RemoteReads
        ) -> Void

    /// What a registry's remote sources read: content (large blocks, read ahead) or index
    /// objects (small ranges: a header and a point table, then one window at a time).
    package enum RemoteReads: Sendable {
        case content
        case indexObjects
        /// GZIDX objects: a header and a point table (18 bytes a point), smaller than a
        /// member index's table.
        case gzipIndexObjects
    }

    private static let registrar = Mutex<Registrar?>(nil)

    /// Sets what `makeRegistry` adds (once, at the program's start).
    package static func install(_ registrar: @escaping Registrar) {
        self.registrar.withLock { $0 = registrar }
    }

    static func register(in registry: DataSourceRegistry, caBundle: String?, s3: S3SourceSettings, reads: RemoteReads) {
        registrar.withLock { $0 }?(registry, caBundle, s3, reads)
    }
}
