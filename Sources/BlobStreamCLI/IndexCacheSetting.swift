// The index cache the tool keeps indexes of remote objects in, when asked (`--index-cache`,
// or BLOBSTREAM_INDEX_CACHE set).

import BlobStream
import BlobStreamCompression
import Foundation

/// Where the tool keeps indexes of remote objects on this machine, if anywhere.
package enum IndexCacheSetting {
    /// The environment variable naming the cache folder (set: the cache is on).
    package static let folderVariable = "BLOBSTREAM_INDEX_CACHE"
    /// The environment variable bounding the cache's size (`512MiB`, `2GiB`, bytes).
    package static let sizeVariable = "BLOBSTREAM_INDEX_CACHE_SIZE"

    /// The cache in use: the folder BLOBSTREAM_INDEX_CACHE names when set, else with
    /// `asked` (`--index-cache`) the user's cache folder (`IndexCache.defaultFolder`); nil
    /// when neither. Bounded by BLOBSTREAM_INDEX_CACHE_SIZE when set, else 1 GiB.
    ///
    /// - Throws: `UsageError` for a size that does not parse, or no folder to use.
    package static func resolve(asked: Bool, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws -> IndexCache?
    {
        var limit = IndexCache.defaultSizeLimit
        if let text = environment[sizeVariable], !text.isEmpty {
            guard let bytes = S3UploadArguments.size(text) else {
                throw UsageError(description: "\(sizeVariable)=\(text) is not a size (e.g. 512MiB, 2GiB, or bytes)")
            }
            limit = Int64(bytes)
        }
        if let folder = environment[folderVariable], !folder.isEmpty {
            return IndexCache(folder: folder, sizeLimit: limit)
        }
        guard asked else { return nil }
        guard let folder = IndexCache.defaultFolder else {
            throw UsageError(
                description:
                    "--index-cache: no cache folder (HOME and XDG_CACHE_HOME are unset); name one with \(folderVariable)=DIR"
            )
        }
        return IndexCache(folder: folder, sizeLimit: limit)
    }
}
