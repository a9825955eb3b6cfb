// The registry every command reads through: the schemes of the modules the tool links.

import BlobStream
import BlobStreamArchive
import BlobStreamAssets
import BlobStreamFiles
import BlobStreamGzip
import Foundation

/// The registry the tool reads through: every scheme of the modules it links. Asset URLs
/// are resolved by the photo library given with `--library`.
package func makeRegistry(
    library: String? = nil, skipArchiveVerification: Bool = false, gzipIndexes: GzipIndexUse = .none
) -> DataSourceRegistry {
    let registry = DataSourceRegistry()
    FileSources.register(in: registry)
    GzipSources.register(in: registry)
    registerIndexedGzip(in: registry, gzipIndexes)
    ArchiveSources.register(in: registry, verification: skipArchiveVerification ? .memberOnly : .wholeArchive)
    if let library {
        AssetSources.register(in: registry, library: DirectoryAssetLibrary(root: URL(fileURLWithPath: library)))
    } else {
        registry.register(scheme: AssetSources.scheme) { url, _ in
            throw BlobStreamError(.notFound, "\(url): asset URLs need the photo library: pass --library DIR")
        }
    }
    return registry
}
