import BlobStream
import BlobStreamArchive
import BlobStreamAssets
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamZstd
import Foundation

/// Every source of BlobStream in one registry, as `blobstream` reads them: files, `gzip:`,
/// `zstd:`, `archive:`, `assets-library:` (with a photo library), and the remote schemes you give it
/// (`StoreSchemes` of BlobStreamS3: `http`, `https`, `s3` over one connection pool), with
/// the indexes found as the tool finds them.
///
/// ```swift
/// import BlobStreamSources
/// import BlobStreamS3
///
/// let sources = BlobSources(remote: StoreSchemes())
/// let registry = sources.makeRegistry()
/// let stream = try BlobInputStream(url: "archive:s3://photos/2024.tar.gz!/DCIM/IMG_0001.JPG", registry: registry)
/// ```
///
/// Indexes (`indexes`): a `gzip:` source over a file reads through the matching
/// `FILE.gz.gzidx` beside it, one over a remote object through `URL.gzidx` beside it (one
/// small request, checked against the object's size and strong ETag); an `archive:` source
/// over a remote archive through `URL.blobidx` beside it; an index kept in `indexCache` for
/// the same object first, with no request. `.named` reads every source through the index
/// it names instead (refused when it does not match), `.none` through none. An index found
/// that does not match is never used (`GzipDataSource.unusedIndexReason` says why).
/// With `indexKey`, only an index sealed with that key is used, wherever it is found
/// (`IndexSeal`), and every index written (`keep(_:of:serverOrigin:at:)`) is sealed with it.
///
/// The remote schemes are registered three times, once per use (`DataSourceReadUse`): the
/// content, the member index objects and the gzip index objects, each read with the block
/// size its use needs (an index pass reads the content as `.indexBuild`). The schemes are given, not linked: a program that reads only local
/// sources links no networking stack (BlobStreamSources depends on no HTTP client).
public struct BlobSources: Sendable {
    /// Which index the `gzip:` and `archive:` sources read through.
    public enum IndexUse: Sendable, Equatable {
        /// None: a gzip stream is inflated from its start, an archive walked.
        case none
        /// The matching index beside the source (or kept in `indexCache`), else none. The default.
        case beside
        /// The index at this path or URL, for every source: an error when it cannot be read
        /// or does not match. A foreign gzip index (no chunk CRC-32s: reads through it cannot
        /// be checked) is refused unless `acceptsUnchecked`.
        case named(String, acceptsUnchecked: Bool)
    }

    /// The remote schemes (`StoreSchemes` of BlobStreamS3); nil: remote URLs are an unknown scheme.
    public var remote: (any DataSourceSchemes)?
    /// The photo library `assets-library:` URLs are resolved by; nil: such a URL is refused,
    /// naming what is missing (`missingLibraryHint`).
    public var library: (any AssetLibrary)?
    /// What a refused `assets-library:` URL says to do (no library given).
    public var missingLibraryHint: String
    /// The inflater of `gzip:` sources, the gzip layer of `archive:` sources and members read
    /// through an index.
    public var inflate: InflateEngine
    /// Which index `gzip:` and `archive:` sources read through.
    public var indexes: IndexUse
    /// Where indexes of remote objects are kept on this machine; nil: nowhere.
    public var indexCache: IndexCache?
    /// How much of an archive is verified before a member's end is announced.
    public var archiveVerification: ArchiveVerification
    /// The largest window a frame of a `zstd:` source may ask for, as a power of 2 (zstd's
    /// own limit, 27, by default; `blobstream --long=N`).
    public var zstdWindowLog: Int = ZstdWindow.defaultLog
    /// The key indexes are sealed with (`IndexSeal`); nil: none. With a key, an index found
    /// anywhere (named, kept in `indexCache`, beside the source) is read whole and used only
    /// when its seal verifies with it: one beside the source or in the cache that does not is
    /// ignored as a stale one is (the cache's copy removed), one named is refused. Every
    /// index `keep(_:of:serverOrigin:at:)` writes is sealed with it. Without, a seal is set
    /// aside and indexes are written unsealed.
    public var indexKey: IndexKey?

    /// Sources with the given settings (by default: no remote scheme, no library, the fastest
    /// inflater, indexes beside the sources, no cache, the whole archive verified).
    public init(
        remote: (any DataSourceSchemes)? = nil, library: (any AssetLibrary)? = nil,
        missingLibraryHint: String = "give BlobSources a photo library", inflate: InflateEngine = .automatic,
        indexes: IndexUse = .beside, indexCache: IndexCache? = nil,
        archiveVerification: ArchiveVerification = .wholeArchive
    ) {
        self.remote = remote
        self.library = library
        self.missingLibraryHint = missingLibraryHint
        self.inflate = inflate
        self.indexes = indexes
        self.indexCache = indexCache
        self.archiveVerification = archiveVerification
    }

    /// A registry of every source (see the type's discussion). Make one per run, or per task,
    /// and read every source through it.
    public func makeRegistry() -> DataSourceRegistry {
        makeRegistry(readingContentFor: .content)
    }

    /// `makeRegistry()`, the remote content read as `use` needs (`.indexBuild` for a pass
    /// that builds an index).
    func makeRegistry(readingContentFor use: DataSourceReadUse) -> DataSourceRegistry {
        let registry = DataSourceRegistry()
        remote?.register(in: registry, for: use)
        FileSources.register(in: registry)
        GzipSources.register(in: registry, engine: inflate, usesSidecarIndex: indexes == .beside)
        ZstdSources.register(in: registry, windowLog: zstdWindowLog)
        // Index objects beside remote objects are read by small ranges: a header and a
        // table first, each window when a decode needs it.
        let memberIndexObjects = DataSourceRegistry()
        remote?.register(in: memberIndexObjects, for: .memberIndex)
        let gzipIndexObjects = DataSourceRegistry()
        remote?.register(in: gzipIndexObjects, for: .gzipIndex)
        registerIndexedGzip(in: registry, indexObjects: gzipIndexObjects)
        registerIndexedZstd(in: registry, indexObjects: memberIndexObjects)
        var namedIndex: String?
        if case .named(let index, _) = indexes { namedIndex = index }
        ArchiveSources.register(
            in: registry, verification: archiveVerification, engine: inflate, indexObjects: memberIndexObjects,
            lookForIndexObjects: indexes != .none, indexCache: indexCache, namedIndex: namedIndex, indexKey: indexKey)
        if let library {
            AssetSources.register(in: registry, library: library)
        } else {
            let hint = missingLibraryHint
            registry.register(scheme: AssetSources.scheme) { url, _ in
                throw BlobStreamError(.notFound, "\(url): asset URLs need the photo library: \(hint)")
            }
        }
        return registry
    }
}
