import BlobStream
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
    /// before a member's end is announced; `.memberOnly` is the fast mode that does not).
    public static func register(in registry: DataSourceRegistry, verification: ArchiveVerification = .wholeArchive) {
        registry.register(scheme: scheme) { url, registry in try makeSource(url: url, registry: registry, verification: verification) }
    }

    /// The source for an `archive:` URL: the inner URL's source (made by `registry`) as the
    /// upstream, the member named after the last `!/`. Errors name the inner URL.
    ///
    /// - Throws: what `split(url:)` and `registry.makeSource(url:)` throw.
    public static func makeSource(
        url: String, registry: DataSourceRegistry, verification: ArchiveVerification = .wholeArchive
    ) throws -> ArchiveMemberDataSource {
        let (inner, member) = try split(url: url)
        let upstream = try registry.makeSource(url: inner)
        return ArchiveMemberDataSource(archive: upstream, member: member, name: inner, verification: verification)
    }

    /// Splits `archive:<url>!/<member>` at the LAST `!/`: the inner URL, undecoded, and the
    /// member, percent-decoded once (a `!` in a name is written `%21`).
    ///
    /// `archive:archive:file:///x.deb!/data.tar.xz!/usr/bin/hello` gives
    /// `archive:file:///x.deb!/data.tar.xz` and `usr/bin/hello`.
    ///
    /// - Throws: `.malformedURL` naming the URL when the scheme is not `archive:`, when there
    ///   is no `!/`, no inner URL, no member, or a bad percent-escape in the member.
    public static func split(url: String) throws -> (archiveURL: String, member: String) {
        guard BlobURL.scheme(of: url)?.lowercased() == scheme else {
            throw BlobStreamError(.malformedURL, "'\(url)' is not an archive: URL (archive:<url>!/<member>)")
        }
        let rest = BlobURL.removingScheme(url)
        guard let separator = rest.range(of: "!/", options: .backwards) else {
            throw BlobStreamError(.malformedURL, "'\(url)' has no '!/' between the archive's URL and the member (archive:<url>!/<member>)")
        }
        let inner = String(rest[..<separator.lowerBound])
        let rawMember = String(rest[separator.upperBound...])
        guard !inner.isEmpty else {
            throw BlobStreamError(.malformedURL, "'\(url)' names no archive before '!/' (archive:<url>!/<member>)")
        }
        guard !rawMember.isEmpty else {
            throw BlobStreamError(.malformedURL, "'\(url)' names no member after the last '!/' (archive:<url>!/<member>)")
        }
        return (inner, try BlobURL.percentDecoded(rawMember, context: url))
    }
}
