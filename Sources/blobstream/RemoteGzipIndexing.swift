import BlobStream
import BlobStreamCLI
import BlobStreamCompression
import BlobStreamSources
import Foundation

/// `blobstream index URL` for an object on a store (`s3://`) or a web server's file
/// (`http(s)://` with a strong ETag): `BlobSources.buildIndex(ofObjectAt:as:gzipSpacing:)`
/// builds it (a member index for a tar, a zip or a gzip that holds a tar; gzip seek points
/// otherwise, or for a `gzip:` URL), and `BlobSources.keep(_:of:serverOrigin:at:)` writes it
/// beside the object (`s3://bucket/KEY.gzidx`, `KEY.blobidx`), where `--output` says, or into
/// the index cache.
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

    /// Builds and writes the index; returns the lines to print (where, what, bytes).
    static func run(_ argument: String, output: String?, spacing: Int, cache: IndexCache?, s3: S3SourceSettings)
        async throws -> String
    {
        let url = objectURL(argument)
        var settings = BlobSources(remote: RunConnections(caBundle: nil).remote(s3: s3), indexCache: cache)
        settings.indexKey = IndexKeySetting.current // sealed with the run's key, when set
        let sources = settings
        let kind: BlobSources.IndexKind = url == argument ? .whatItHolds : .gzip
        let (index, serverOrigin) = try await offThread {
            try sources.buildIndex(ofObjectAt: url, as: kind, gzipSpacing: spacing)
        }
        let kept: [BlobSources.KeptIndex]
        do {
            kept = try await sources.keep(index, of: url, serverOrigin: serverOrigin, at: output)
        } catch {
            let hint =
                error.code == .unsupported
                ? "; name a path or an s3:// URL with --output"
                : output != nil || cache != nil ? "" : "; write it elsewhere with --output PATH (or another s3:// URL)"
            throw ToolFailure(message: "\(error.message)\(hint)")
        }
        return kept.map { "\($0.location)\t\($0.contents)\t\($0.byteCount) bytes" }.joined(separator: "\n")
    }

    /// Runs blocking `work` (reads that wait for the store) on a thread of its own.
    static func offThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}
