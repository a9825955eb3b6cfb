import AsyncHTTPClient
import BlobStream
import BlobStreamHTTPClient
import Foundation
import NIOHTTP1

/// Reads `s3://bucket/key` objects by ranged GETs signed with SigV4, so that every
/// composition works on objects in a store: `gzip:s3://…/x.gz`, `archive:s3://…/x.tar!/member`,
/// and offsets (`Range`).
///
/// ```swift
/// let registry = DataSourceRegistry()
/// S3Sources.register(in: registry) { try S3Configuration.resolve() }
/// ArchiveSources.register(in: registry)  // BlobStreamArchive, for archive: URLs
/// let stream = try BlobInputStream(url: "archive:s3://photos/2024.tar!/DCIM/IMG_0001.JPG", registry: registry)
/// ```
///
/// A source is an `HTTPRangeDataSource` on the object's URL at the endpoint (path-style or
/// virtual-hosted, as the configuration says) whose `prepare` hook signs each request:
/// `Host`, `Range` and `If-Match` are signed headers, the payload hash is the empty body's.
/// Errors name `s3://bucket/key`, with S3's code: `.notFound` (404 `NoSuchKey`,
/// `NoSuchBucket`), `.permissionDenied` (403: wrong credentials, `SignatureDoesNotMatch`),
/// `.changed` (the object was replaced while read: its ETag no longer matches), and the
/// transport errors of `HTTPRangeDataSource`.
public enum S3Sources {
    /// The scheme this module serves: `s3`.
    public static let scheme = "s3"

    /// Registers `s3:` in `registry`, every object read from the store `configuration`
    /// names, with `options` (block size, connection: CA bundle, proxies; see
    /// `HTTPRangeOptions`; a `prepare` hook of the caller's runs before signing).
    public static func register(
        in registry: DataSourceRegistry, configuration: S3Configuration, options: HTTPRangeOptions = HTTPRangeOptions()
    ) {
        register(in: registry, options: options) { configuration }
    }

    /// Registers `s3:` in `registry` with a configuration found when a source is made (for
    /// a program that registers the scheme whether or not the user reads from S3, e.g.
    /// `{ try S3Configuration.resolve() }`: missing credentials then fail that source, naming it).
    public static func register(
        in registry: DataSourceRegistry, options: HTTPRangeOptions = HTTPRangeOptions(),
        configuration: @escaping @Sendable () throws -> S3Configuration
    ) {
        registry.register(scheme: scheme) { url, _ in
            let location: S3Location
            do {
                location = try S3Location(url: url)
            } catch {
                throw BlobStreamError(.malformedURL, "\(error)", cause: error)
            }
            let found: S3Configuration
            do {
                found = try configuration()
            } catch {
                throw BlobStreamError(.sourceFailed, "\(url): \(error)", cause: error)
            }
            return makeSource(location, configuration: found, options: options)
        }
    }

    /// A source for an `s3://bucket/key` URL (the key as written: `%` is part of it).
    ///
    /// - Throws: `BlobStreamError` `.malformedURL` when `url` is not of that form.
    public static func makeSource(
        url: String, configuration: S3Configuration, options: HTTPRangeOptions = HTTPRangeOptions()
    ) throws(BlobStreamError) -> HTTPRangeDataSource {
        let location: S3Location
        do {
            location = try S3Location(url: url)
        } catch {
            throw BlobStreamError(.malformedURL, error.message, cause: error)
        }
        return makeSource(location, configuration: configuration, options: options)
    }

    /// A source for the object at `location`; nothing is sent until `open()`.
    public static func makeSource(
        _ location: S3Location, configuration: S3Configuration, options: HTTPRangeOptions = HTTPRangeOptions()
    ) -> HTTPRangeDataSource {
        let target = S3Client.target(configuration, bucket: location.bucket, key: location.key)
        let url = URL(string: target.base + SigV4Signer.uriEncode(target.path, keepingSlash: true))!
        let signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
        var signing = options
        let callers = options.prepare
        signing.prepare = { request in
            try callers?(&request)
            var unsigned = SigV4Request(method: request.method.rawValue, path: target.path)
            unsigned.headers.append((name: "Host", value: target.host))
            for header in request.headers where header.name.lowercased() != "host" {
                unsigned.headers.append((name: header.name, value: header.value))
            }
            let signed = signer.sign(unsigned, payloadHash: SigV4Signer.emptyPayloadHash, date: Date())
            request.headers = HTTPHeaders(signed.headers.map { ($0.name, $0.value) })
        }
        if signing.wholeObjectCheck == nil {
            signing.wholeObjectCheck = wholeObjectCheck(
                url: url, target: target, signer: signer, options: options, name: location.description)
        }
        return HTTPRangeDataSource(url: url, options: signing, name: location.description)
    }

    /// The check of a read whole from the first byte: against the `FULL_OBJECT` checksum the
    /// store keeps (`S3WholeObjectCheck`), for an object larger than the first GET's block,
    /// asked for with a signed `HEAD` sent with the client the source sends with. None for a
    /// source an upload reads a part of (`PartReader.isReadingPart`): no read of it is whole,
    /// and its `HEAD` would go unused (a copy in parts asks its own, once).
    private static func wholeObjectCheck(
        url: URL, target: (base: String, path: String, host: String), signer: SigV4Signer, options: HTTPRangeOptions,
        name: String
    ) -> @Sendable (HTTPObjectFacts) -> (any HTTPWholeObjectCheck)? {
        { facts in
            guard facts.length > S3WholeObjectCheck.smallestChecked, !PartReader.isReadingPart,
                let client = try? options.client
                    ?? (options.pool ?? .shared(connection: options.connection)).client(
                        for: url)
            else { return nil }
            var unsigned = SigV4Request(method: "HEAD", path: target.path)
            unsigned.headers = [(name: "Host", value: target.host), (name: "x-amz-checksum-mode", value: "ENABLED")]
            let signed = signer.sign(unsigned, payloadHash: SigV4Signer.emptyPayloadHash, date: Date())
            guard
                let head = try? HTTPClient.Request(
                    url: url, method: .HEAD, headers: HTTPHeaders(signed.headers.map { ($0.name, $0.value) }))
            else { return nil }
            return S3WholeObjectCheck(name: name, facts: facts, head: head, client: client, hedging: options.hedging)
        }
    }
}
