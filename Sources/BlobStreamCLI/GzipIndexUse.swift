// Which index the reading commands use (--index).

import BlobStreamSources

/// Which seek-point or member index `gzip:` and `archive:` sources use (`--index`): the
/// library's `BlobSources.IndexUse`.
package typealias GzipIndexUse = BlobSources.IndexUse
