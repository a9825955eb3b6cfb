// The registry every command reads through: `BlobSources`, the library's composition of
// every source, with the remote schemes the program gives (none in `blobstream-urlsession`).

import BlobStream
import BlobStreamAssets
import BlobStreamCompression
import BlobStreamSources
import Foundation

/// The registry the tool reads through (`BlobSources`): asset URLs resolved by the photo
/// library given with `--library`; `gzip:` sources, the gzip layer of `archive:` sources and
/// tar.gz members read through an index inflated with `inflate` (`--inflate`); the index
/// `gzipIndexes` says (`--index`; by default the matching one beside each source);
/// `indexCache`, where indexes of remote objects are kept on this machine (`--index-cache`),
/// if anywhere; frames of `zstd:` sources may ask for windows up to 2^`zstdWindowLog` bytes
/// (`--long`). `remote`: the program's remote schemes (`blobstream`: `StoreSchemes` over
/// the run's pool, with `--ca-bundle` and the S3 options); nil: remote URLs are unknown.
/// `indexKey`: only indexes sealed with it are used (by default the run's key,
/// `BLOBSTREAM_INDEX_KEY`).
package func makeRegistry(
    library: String? = nil, skipArchiveVerification: Bool = false, remote: (any DataSourceSchemes)? = nil,
    inflate: InflateEngine = .automatic, gzipIndexes: GzipIndexUse = .beside, indexCache: IndexCache? = nil,
    zstdWindowLog: Int = ZstdWindow.defaultLog, indexKey: IndexKey? = IndexKeySetting.current
) -> DataSourceRegistry {
    var sources = BlobSources(
        remote: remote, library: library.map { DirectoryAssetLibrary(root: URL(fileURLWithPath: $0)) },
        missingLibraryHint: "pass --library DIR", inflate: inflate, indexes: gzipIndexes, indexCache: indexCache,
        archiveVerification: skipArchiveVerification ? .memberOnly : .wholeArchive)
    sources.zstdWindowLog = zstdWindowLog
    sources.indexKey = indexKey
    return sources.makeRegistry()
}
