import BlobStream
@_exported import BlobStreamCompression
import Foundation

/// Registers the `archive:` scheme: `archive:<url>!/<member>`.
///
/// ```swift
/// let registry = DataSourceRegistry()
/// FileSources.register(in: registry)
/// ArchiveSources.register(in: registry)
/// let stream = try BlobInputStream(url: "archive:archive:file:///tmp/hello.deb!/data.tar.xz!/usr/bin/hello", registry: registry)
/// ```
public enum ArchiveSources {
    /// The scheme this module serves.
    public static let scheme = "archive"

    /// Registers `archive:` in `registry`. The inner URL is made by the same registry, so
    /// any registered scheme can hold the archive (`file:`, `gzip:`, `archive:` itself).
    /// Members are read with `verification` (by default the whole archive is verified
    /// before a member's end is announced; `.memberOnly` is the fast mode that does not),
    /// and a gzip layer (and members inflated through an index) inflated with `engine`.
    /// An archive on a store or a web server is read through its index object beside it
    /// (`URL.blobidx`) when that matches its size and strong ETag; the index object's source
    /// is made by `indexObjects` (by default `registry`; one whose sources ask for small
    /// ranges suits it best). `lookForIndexObjects: false` never asks for one. With
    /// `indexCache`, an index kept there for the archive's size and ETag is used with no
    /// request for it, and one found beside the archive is kept there. With `namedIndex` (a
    /// path, or a URL `indexObjects` makes: an index on a store for an archive on a store, a
    /// local index for a remote archive), every archive is read through that index, which is
    /// refused when it does not match. With `indexKey`, only an index sealed with it is used
    /// (`IndexSeal`; see `ArchiveMemberDataSource.useIndexKey(_:)`).
    public static func register(
        in registry: DataSourceRegistry, verification: ArchiveVerification = .wholeArchive,
        engine: InflateEngine = .automatic, indexObjects: DataSourceRegistry? = nil, lookForIndexObjects: Bool = true,
        indexCache: IndexCache? = nil, namedIndex: String? = nil, indexKey: IndexKey? = nil
    ) {
        registry.register(scheme: scheme) { url, registry in
            guard let namedIndex else {
                let source = try makeSource(
                    url: url, registry: registry, verification: verification, engine: engine,
                    indexObjects: lookForIndexObjects ? indexObjects ?? registry : nil, indexCache: indexCache)
                source.useIndexKey(indexKey)
                return source
            }
            return try makeSource(
                url: url, registry: registry, verification: verification, engine: engine,
                namedIndex: namedIndex, indexObjects: indexObjects ?? registry, indexKey: indexKey)
        }
    }

    /// The source for an `archive:` URL read through the member index `namedIndex`: a path
    /// (or a `file:` URL), or a URL `indexObjects` makes a source of (read by range, at once).
    /// The index is checked against the archive at the open: its size and strong ETag for an
    /// object, its size, time and sampled bytes for a file; a mismatch fails the open.
    ///
    /// With `indexKey`, the index is read whole and refused unless its seal verifies with it
    /// (`IndexSeal`).
    ///
    /// - Throws: what `makeSource(url:registry:verification:engine:indexObjects:indexCache:)`
    ///   throws; the index's error (not found, damaged, not sealed with `indexKey`) naming it.
    public static func makeSource(
        url: String, registry: DataSourceRegistry, verification: ArchiveVerification = .wholeArchive,
        engine: InflateEngine = .automatic, namedIndex: String, indexObjects: DataSourceRegistry,
        indexKey: IndexKey? = nil
    ) throws -> ArchiveMemberDataSource {
        let source = try makeSource(url: url, registry: registry, verification: verification, engine: engine)
        source.useIndexKey(indexKey)
        let inner = try components(of: url).archiveURL
        let scheme = BlobURL.scheme(of: namedIndex)?.lowercased()
        let option: ArchiveIndexOption
        if scheme == nil || scheme == "file" {
            option = .file(scheme == nil ? namedIndex : try BlobURL.path(ofFileURL: namedIndex))
        } else {
            do {
                option = .index(
                    try ArchiveIndex.read(named: namedIndex, key: indexKey) { try indexObjects.makeSource(url: $0) })
            } catch {
                throw BlobStreamError(
                    error.code, "\(inner): cannot use the index named (\(namedIndex)): \(error)",
                    cause: error)
            }
        }
        if BlobURL.scheme(of: inner)?.lowercased() == "file", let path = try? BlobURL.path(ofFileURL: inner) {
            source.useIndex(option, archivePath: path)
        } else {
            source.useIndex(option, archivePath: nil)
        }
        return source
    }

    /// The source for an `archive:` URL: the inner URL's source (made by `registry`) as the
    /// upstream, the member named after the last `!/` (matched on its raw bytes, so names
    /// that are not UTF-8 are reached by their `%XX` spelling), inflating with `engine`.
    /// Over a `BlobRangeReading` upstream, its index object beside it is looked for through
    /// `indexObjects` (nil: none is). Errors name the inner URL.
    ///
    /// - Throws: what `components(of:)` and `registry.makeSource(url:)` throw.
    public static func makeSource(
        url: String, registry: DataSourceRegistry, verification: ArchiveVerification = .wholeArchive,
        engine: InflateEngine = .automatic, indexObjects: DataSourceRegistry? = nil, indexCache: IndexCache? = nil
    ) throws -> ArchiveMemberDataSource {
        let (inner, member) = try components(of: url)
        let upstream = try registry.makeSource(url: inner)
        let source = ArchiveMemberDataSource(
            archive: upstream, memberBytes: member, name: inner, verification: verification)
        source.useInflateEngine(engine)
        // A file's index beside it (`ARCHIVE.blobidx`) is used when it matches; an object's
        // (`URL.blobidx`, made by the same registry) when it matches its size and ETag.
        if BlobURL.scheme(of: inner)?.lowercased() == "file", let path = try? BlobURL.path(ofFileURL: inner) {
            source.useIndex(.automatic, archivePath: path)
        } else if upstream is any BlobRangeReading, let indexObjects {
            source.useIndex(.automatic, besideArchiveAt: inner, cache: indexCache) {
                try indexObjects.makeSource(url: $0)
            }
        }
        return source
    }

    /// Splits `archive:<url>!/<member>` at the LAST `!/`: the inner URL, undecoded, and the
    /// member, percent-decoded once (a `!` in a name is written `%21`).
    ///
    /// `archive:archive:file:///x.deb!/data.tar.xz!/usr/bin/hello` gives
    /// `archive:file:///x.deb!/data.tar.xz` and `usr/bin/hello`.
    ///
    /// - Throws: what `components(of:)` throws, and `.malformedURL` when the member's bytes
    ///   are not UTF-8 (`components(of:)` gives them).
    public static func split(url: String) throws -> (archiveURL: String, member: String) {
        let (inner, bytes) = try components(of: url)
        guard let member = String(validating: bytes, as: UTF8.self) else {
            throw BlobStreamError(.malformedURL, "'\(url)': the member's name decodes to bytes that are not UTF-8")
        }
        return (inner, member)
    }

    /// Splits `archive:<url>!/<member>` at the LAST `!/`: the inner URL, undecoded, and the
    /// member's raw bytes, percent-decoded once (`%C4` is the byte 0xC4, as
    /// `ArchiveEntry.escapedPath` spells it).
    ///
    /// - Throws: `.malformedURL` naming the URL when the scheme is not `archive:`, when there
    ///   is no `!/`, no inner URL, no member, a bad percent-escape or a NUL in the member.
    public static func components(of url: String) throws -> (archiveURL: String, memberBytes: [UInt8]) {
        guard BlobURL.scheme(of: url)?.lowercased() == scheme else {
            throw BlobStreamError(.malformedURL, "'\(url)' is not an archive: URL (archive:<url>!/<member>)")
        }
        let rest = BlobURL.removingScheme(url)
        guard let separator = rest.range(of: "!/", options: .backwards) else {
            throw BlobStreamError(
                .malformedURL, "'\(url)' has no '!/' between the archive's URL and the member (archive:<url>!/<member>)"
            )
        }
        let inner = String(rest[..<separator.lowerBound])
        let rawMember = String(rest[separator.upperBound...])
        guard !inner.isEmpty else {
            throw BlobStreamError(.malformedURL, "'\(url)' names no archive before '!/' (archive:<url>!/<member>)")
        }
        guard !rawMember.isEmpty else {
            throw BlobStreamError(
                .malformedURL, "'\(url)' names no member after the last '!/' (archive:<url>!/<member>)")
        }
        return (inner, try BlobURL.percentDecodedBytes(rawMember, context: url))
    }
}
