// The registry every command reads through: the schemes of the modules the tool links.

import BlobStream
import BlobStreamArchive
import BlobStreamAssets
import BlobStreamFiles
import BlobStreamGzip
import Foundation
import Synchronization

/// The registry the tool reads through: every scheme of the modules it links. Asset URLs
/// are resolved by the photo library given with `--library`.
/// Remote schemes (`http`, `https`) come from the program through `RemoteSchemes`, with
/// `caBundle` (`--ca-bundle`) as an extra trust root.
package func makeRegistry(library: String? = nil, skipArchiveVerification: Bool = false, caBundle: String? = nil)
    -> DataSourceRegistry
{
    let registry = DataSourceRegistry()
    RemoteSchemes.register(in: registry, caBundle: caBundle)
    FileSources.register(in: registry)
    GzipSources.register(in: registry)
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

/// The schemes a program adds to every registry the tool makes: `blobstream` adds `http`
/// and `https` (BlobStreamHTTPClient), which this module does not link, so that
/// `blobstream-urlsession` stays free of AsyncHTTPClient (there, remote URLs are an unknown
/// scheme).
package enum RemoteSchemes {
    /// Registers schemes in a registry; `caBundle` is the `--ca-bundle` given, if any.
    package typealias Registrar = @Sendable (_ registry: DataSourceRegistry, _ caBundle: String?) -> Void

    private static let registrar = Mutex<Registrar?>(nil)

    /// Sets what `makeRegistry` adds (once, at the program's start).
    package static func install(_ registrar: @escaping Registrar) {
        self.registrar.withLock { $0 = registrar }
    }

    static func register(in registry: DataSourceRegistry, caBundle: String?) {
        registrar.withLock { $0 }?(registry, caBundle)
    }
}
