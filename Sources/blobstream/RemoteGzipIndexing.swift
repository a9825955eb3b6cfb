import BlobStream
import BlobStreamCLI
import BlobStreamCompression
import BlobStreamGzip
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NIOCore

/// `blobstream index URL` for a gzip object on a store (`s3://`) or a web server's file
/// (`http(s)://` with a strong ETag): the index is built by reading the object through its
/// ranged source (pinned to its ETag, so a change mid-way fails the build), records the
/// object's size and ETag, and is written beside it (`s3://bucket/KEY.gzidx`), or where
/// `--output` says (a path, or an `s3://` URL).
enum RemoteGzipIndexing {
    /// True for an argument that names a remote object (`s3:`, `http:`, `https:`, with or
    /// without a `gzip:` prefix).
    static func isRemote(_ argument: String) -> Bool {
        ["s3", "http", "https"].contains(BlobURL.scheme(of: objectURL(argument))?.lowercased() ?? "")
    }

    /// The object's URL: the argument without a `gzip:` prefix.
    static func objectURL(_ argument: String) -> String {
        argument.lowercased().hasPrefix("gzip:") ? BlobURL.removingScheme(argument) : argument
    }

    /// Builds and writes the index; returns the line to print (where, seek points, bytes).
    static func run(_ argument: String, output: String?, spacing: Int, cache: IndexCache?, s3: S3SourceSettings)
        async throws -> String
    {
        let url = objectURL(argument)
        let registry = makeRegistry(remote: RunConnections.remote(caBundle: nil, s3: s3))
        // A tar, a zip, or a gzip that holds a tar (not named gzip:…): a member index.
        if url == argument, try await RemoteArchiveIndexing.isArchive(url, registry: registry) {
            return try await RemoteArchiveIndexing.run(
                url, output: output, spacing: spacing, cache: cache, registry: registry, s3: s3)
        }
        let (index, serverOrigin) = try await offThread { () throws -> (GzipIndex, String?) in
            let made: any BlobDataSource
            do {
                made = try registry.makeSource(url: url)
            } catch {
                throw ToolFailure(message: "cannot index \(url): \(error)")
            }
            guard let object = made as? any BlobRangeReading else {
                throw ToolFailure(message: "cannot index \(url): its source cannot be read by range")
            }
            object.open()
            guard let identity = try object.contentIdentity() else {
                object.close()
                throw ToolFailure(
                    message:
                        "cannot index \(url): the server sends no strong ETag, so no index could be checked against it later"
                )
            }
            var index = try GzipIndex.build(from: object, spacing: spacing, name: url, engine: .automatic)
            index.identity = identity
            return (index, object.serverOrigin)
        }
        let bytes = index.serialized()
        let summary = "\(index.points.count) seek points\t\(bytes.count) bytes"
        if let cache, let identity = index.identity {
            let path = try cache.keep(
                bytes, forSourceAt: url, serverOrigin: serverOrigin, identity: identity, kind: .gzip)
            return "\(path)\t\(summary)"
        }
        let destination = output ?? GzipIndex.sidecar(of: url)
        try await store(bytes, at: destination, for: url, named: output != nil, role: "the gzip index", s3: s3)
        return "\(destination)\t\(summary)"
    }

    /// Writes an index to `destination`: an `s3://` URL (an object) or a path (`OutputFile`).
    static func store(
        _ bytes: [UInt8], at destination: String, for url: String, named: Bool, role: String, s3: S3SourceSettings
    ) async throws {
        switch BlobURL.scheme(of: destination)?.lowercased() {
        case "s3":
            try await putIndex(bytes, at: destination, for: url, named: named, s3: s3)
        case "http", "https":
            throw ToolFailure(
                message:
                    "cannot write the index of \(url) to \(destination): an index goes to a path or an s3:// URL; name one with --output"
            )
        default:
            let file = try OutputFile(destination, role: role, inputs: [])
            try file.write(bytes)
        }
    }

    /// Stores the index as an object; a refusal names the object and `--output`.
    static func putIndex(
        _ bytes: [UInt8], at destination: String, for url: String, named: Bool, s3: S3SourceSettings
    )
        async throws
    {
        do {
            let location = try S3Location(url: destination)
            let configuration = try S3Configuration.resolve(
                profile: s3.profile, region: s3.region, endpointURL: s3.endpointURL)
            let client = try S3Client(configuration: configuration, pool: RunConnections.pool(caBundle: nil))
            _ = try await client.putObject(
                location, body: ByteBuffer(bytes: bytes), contentType: "application/octet-stream")
        } catch {
            let hint = named ? "" : "; write it elsewhere with --output PATH (or another s3:// URL)"
            throw ToolFailure(message: "the store did not take the index \(destination) of \(url): \(error)\(hint)")
        }
    }

    /// Runs blocking `work` (reads that wait for the store) on a thread of its own.
    static func offThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}
