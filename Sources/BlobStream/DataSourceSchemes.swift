import Foundation

/// What the sources of a registry are read for: each use needs its own read size from a
/// remote store (large blocks read ahead for content; a small first answer and nothing
/// ahead for an index object beside it). `DataSourceSchemes` registers its schemes for one use.
public enum DataSourceReadUse: Sendable, Hashable {
    /// Content: a whole object, a member of an archive, a gzip stream (large blocks, read ahead).
    case content
    /// A member index object beside an archive (`ARCHIVE.blobidx`): its header and member
    /// table in one first answer, nothing read ahead.
    case memberIndex
    /// A gzip index object beside a gzip object (`FILE.gz.gzidx`): its header and point table
    /// in one first answer, each window asked for when a decode needs it.
    case gzipIndex
    /// An object read whole, in order, by a pass that builds its index (`blobstream index
    /// s3://…`): the pass inflates as it goes, so the read need only keep ahead of the
    /// inflater, in less memory than a download.
    case indexBuild
}

/// A set of schemes that registers its sources in a registry, read as a use needs: how a
/// composition of sources takes schemes from a module it does not link (`BlobSources` of
/// BlobStreamSources takes `StoreSchemes` of BlobStreamS3, which reads `http`, `https` and
/// `s3` over one connection pool).
///
/// ```swift
/// struct MySchemes: DataSourceSchemes {
///     func register(in registry: DataSourceRegistry, for use: DataSourceReadUse) {
///         registry.register(scheme: "my") { url, _ in MySource(url: url, blockSize: use == .content ? 8 << 20 : 64 << 10) }
///     }
/// }
/// ```
public protocol DataSourceSchemes: Sendable {
    /// Registers the schemes in `registry`, their sources read as `use` needs.
    func register(in registry: DataSourceRegistry, for use: DataSourceReadUse)
}

/// Remote schemes that can also store a small object (an index beside the object it
/// describes): `StoreSchemes` of BlobStreamS3 stores to `s3:` URLs.
public protocol DataSourceObjectStoring: DataSourceSchemes {
    /// Stores `bytes` as the object at `url`, replacing one there.
    ///
    /// - Throws: `.unsupported` for a URL the schemes cannot store to (a web server's);
    ///   the store's refusal, naming `url`.
    func store(_ bytes: [UInt8], at url: String) async throws(BlobStreamError)
}
