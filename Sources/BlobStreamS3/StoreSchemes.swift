import BlobStream
import BlobStreamHTTPClient
import Foundation
import NIOCore

/// The remote schemes of BlobStream, `http`, `https` (`HTTPSources`) and `s3` (`S3Sources`),
/// over one connection pool, each read with the block size its use needs. It is what
/// `BlobSources` (BlobStreamSources) takes to read objects on web servers and stores, and
/// what `blobstream` reads through.
///
/// ```swift
/// let pool = HTTPClientPool(connection: .fromEnvironment())
/// let sources = BlobSources(remote: StoreSchemes(pool: pool))
/// let stream = try BlobInputStream(url: "gzip:s3://logs/2026/big.log.gz", registry: sources.makeRegistry())
/// // … read …
/// try await pool.shutdown()
/// ```
///
/// The read sizes, in one place (`options(for:)`): content of a web server in
/// `HTTPRangeOptions`' default blocks; content of a store in 8 MiB GETs (awscli's chunk), 2
/// read ahead (a member or an offset, decoded as it comes), and for a download (a read from
/// the start with no jump) 12 MiB a GET, 3 read ahead, to go at the store's speed; an object
/// read whole by an index pass in 12 MiB GETs, 1 read ahead (it need only keep ahead of the
/// inflater); an index
/// object beside an archive in one 2 MiB first answer (a member table of about 20,000
/// members), one beside a gzip object in 512 KiB (a point table of about 29,000 points: 116
/// GiB at the 4 MiB spacing), nothing read ahead.
public struct StoreSchemes: DataSourceSchemes {
    /// The pool every source sends with (by default the process's shared pool for the
    /// environment's connection options); its owner shuts it down.
    public var pool: HTTPClientPool
    /// The store `s3:` sources read from, looked up when the first one is made (by default
    /// as awscli finds it: `S3Configuration.resolve()`).
    public var s3: @Sendable () throws -> S3Configuration

    /// Schemes over `pool`, with `s3:` sources read from the store `s3` gives.
    public init(
        pool: HTTPClientPool = .shared(connection: .fromEnvironment()),
        s3: @escaping @Sendable () throws -> S3Configuration = { try S3Configuration.resolve() }
    ) {
        self.pool = pool
        self.s3 = s3
    }

    /// Registers `http`, `https` and `s3` in `registry`, read as `use` needs.
    public func register(in registry: DataSourceRegistry, for use: DataSourceReadUse) {
        HTTPSources.register(in: registry, options: options(for: use, onStore: false))
        S3Sources.register(in: registry, options: options(for: use, onStore: true), configuration: s3)
    }

    /// The options of the sources of one use: the pool, and the read sizes (see the type's
    /// discussion). `onStore`: an `s3:` object (a store takes a while to answer each GET,
    /// so larger blocks, more ahead).
    public func options(for use: DataSourceReadUse, onStore: Bool) -> HTTPRangeOptions {
        var options = HTTPRangeOptions(connection: pool.connection, pool: pool)
        switch use {
        case .content:
            guard onStore else { return options }
            options.blockSize = 8 << 20
            options.readAhead = 2
            options.downloadBlockSize = 12 << 20
            options.downloadReadAhead = 3
        case .memberIndex:
            options.blockSize = 2 << 20
            options.readAhead = 0
        case .gzipIndex:
            options.blockSize = 512 << 10
            options.readAhead = 0
        case .indexBuild:
            // A download's 12 MiB GETs (each GET costs a store CPU), 2 in flight (a download
            // keeps 4): an index pass of a tar.gz stays within 128 MiB with its index in
            // memory, and keeps ahead of the inflater (8 MiB × 3 held as much and cost the
            // store 0.5 CPU-s more for photos.tar.gz).
            options.blockSize = 12 << 20
            options.readAhead = 1
        }
        return options
    }
}

extension StoreSchemes: DataSourceObjectStoring {
    /// Stores `bytes` as the object at the `s3:` URL `url` (one PutObject through `pool`, as
    /// `application/octet-stream`).
    ///
    /// - Throws: `.unsupported` for any other URL (a web server takes no index);
    ///   `BlobStreamError` naming `url` when the store refuses it or cannot be reached.
    public func store(_ bytes: [UInt8], at url: String) async throws(BlobStreamError) {
        guard BlobURL.scheme(of: url)?.lowercased() == "s3" else {
            throw BlobStreamError(.unsupported, "\(url): only an s3:// URL or a path can take an index")
        }
        do {
            let location = try S3Location(url: url)
            let client = try S3Client(configuration: try s3(), pool: pool)
            _ = try await client.putObject(
                location, body: ByteBuffer(bytes: bytes), contentType: "application/octet-stream")
        } catch {
            let own = error as? BlobStreamError
            throw BlobStreamError(own?.code ?? .sourceFailed, "the store did not take \(url): \(error)", cause: error)
        }
    }
}
