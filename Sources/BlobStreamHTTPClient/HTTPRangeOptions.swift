import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore
import NIOHTTP1

/// One request `HTTPRangeDataSource` is about to send, as the `prepare` hook sees it: the
/// `Range` header (and `If-Match` once the object's strong ETag is known) are already in
/// `headers`.
public struct HTTPRangeRequest: Sendable {
    /// Where the request goes.
    public var url: URL
    /// The method: `GET`.
    public var method: HTTPMethod
    /// The request's headers; a hook adds its own (a SigV4 `Authorization`, say).
    public var headers: HTTPHeaders
    /// The bytes this request asks for (the `Range` header says the same). A request to the
    /// object's end (`Range: bytes=OFFSET-`, the first GET of a source) has `toEnd` as its
    /// upper bound: see `isToEnd`.
    public let range: ClosedRange<Int64>

    /// The upper bound of `range` for a request to the object's end (`Int64.max - 1`, so
    /// that `range.count` does not overflow).
    public static let toEnd = Int64.max - 1

    /// True for a request from `range.lowerBound` to the object's end (`Range: bytes=OFFSET-`).
    public var isToEnd: Bool { range.upperBound == Self.toEnd }

    /// N for a request of the object's last N bytes (`Range: bytes=-N`, `expectEnd(_:)`),
    /// sent before the object's length is known; `range` is then `0...N-1`, counted from the
    /// N-th byte before the end. nil for every other request.
    public var suffixLength: Int64?

    /// A request as the source makes it; public so that a hook can be tested alone.
    public init(url: URL, method: HTTPMethod = .GET, headers: HTTPHeaders = [:], range: ClosedRange<Int64>) {
        self.url = url
        self.method = method
        self.headers = headers
        self.range = range
    }
}

/// How `HTTPRangeDataSource` reads: the block size and how many blocks are in flight, the
/// retry policy and the redirects followed, the connection (trust roots, proxy, timeouts), an
/// optional client of the caller's, and the hook that prepares each request.
///
/// ```swift
/// var options = HTTPRangeOptions(blockSize: 16 << 20)  // 16 MiB per GET
/// options.parallelism = 8                              // 8 GETs in flight, 128 MiB at most
/// options.retry = HTTPRetryPolicy(maxWaiting: .seconds(120))
/// ```
public struct HTTPRangeOptions: Sendable {
    /// Called for every request after its `Range` and `If-Match` headers are set, just
    /// before it is sent, on the thread that asks for the bytes (the reading thread), except
    /// for the first GET sent again (a retry, a redirect: `request.url` is then the new
    /// location), the hedges of the first GET and of the blocks read ahead (`HTTPHedging`),
    /// and the `HEAD` (no `Range`) that follows a first GET answered 416 without the object's
    /// length, prepared on an event loop of the client: the hook must not block.
    /// It may add headers or sign the request (by `request.method`); an error it throws
    /// fails the read (`.sourceFailed`, naming the URL, the error as cause). Synchronous on
    /// purpose: reading never depends on the cooperative thread pool.
    ///
    /// The hook runs only for requests to the source's own origin (the scheme, host and port
    /// of its URL): what it adds is made for that origin and never goes anywhere else. A
    /// redirect to another origin is then followed only when the location carries its own
    /// authorization (a presigned URL), without the hook; otherwise the read fails naming it.
    public typealias Prepare = @Sendable (inout HTTPRangeRequest) throws -> Void

    /// The default block: 8 MiB per ranged GET (the part size of uploads).
    public static let defaultBlockSize = 8 << 20
    /// The default read-ahead: 3 blocks after the one being read, so 4 GETs in flight (the
    /// parallelism of uploads).
    public static let defaultReadAhead = 3
    /// The most redirects a read follows by default: 5 (as wget; `curl -L` follows 50).
    public static let defaultMaxRedirects = 5

    /// The bytes one GET asks for (at least 64 KiB).
    public var blockSize: Int
    /// The bytes one GET asks for in a download: a read that goes on from where it started
    /// (the object's start, or an offset set before the first read) with no jump and no
    /// hint (`expectRead(_:)`, `expectRandomAccess()`, `bytes(in:)`); nil: `blockSize`. Larger blocks mean fewer GETs where a store spends time on each one
    /// (OpenStack Swift on loopback downloads 1 GiB about 8% faster with 12 MiB GETs than
    /// with 8 MiB ones) while random and member reads keep `blockSize`; the memory a
    /// download holds is then about `downloadBlockSize × parallelism`. At least 64 KiB.
    public var downloadBlockSize: Int? {
        didSet { downloadBlockSize = downloadBlockSize.map { max($0, 64 << 10) } }
    }
    /// How many blocks are read ahead in a download (the read `downloadBlockSize` describes);
    /// nil: `readAhead`. A download keeps enough GETs in flight to go at the store's speed,
    /// while a member or random read, whose bytes are decoded as they come, needs fewer: the
    /// memory a download holds is about `downloadBlockSize × (downloadReadAhead + 1)`.
    /// At least 0.
    public var downloadReadAhead: Int? {
        didSet { downloadReadAhead = downloadReadAhead.map { max($0, 0) } }
    }
    /// How many blocks after the one being read are asked for ahead (GETs in flight while
    /// a block is read): 3 by default; more helps on links with long round trips or servers
    /// slow to answer each GET. The blocks are handed out in order; the memory held is
    /// about `blockSize × (readAhead + 1)`.
    public var readAhead: Int
    /// The GETs in flight: the block being read and those read ahead (`readAhead + 1`; at
    /// least 1). 4 by default; the memory held is about `blockSize × parallelism`.
    public var parallelism: Int {
        get { readAhead + 1 }
        set { readAhead = max(newValue, 1) - 1 }
    }
    /// How a failed GET is tried again (see `HTTPRetryPolicy`): by default at most 5
    /// attempts per range and 30 s of waiting per source.
    public var retry: HTTPRetryPolicy
    /// The slowest a GET's body may come (see `HTTPMinimumRate`): a GET below it is a stall,
    /// ended and tried again at its offset like an idle timeout. 1 KiB/s over 30 s by
    /// default (`HTTPMinimumRate.standard`); nil: only the idle timeout ends a slow GET.
    public var minimumRate: HTTPMinimumRate?
    /// When a range the reader waits for is asked for again while its GET is silent (see
    /// `HTTPHedging`): after 100 ms at least by default (250 ms for a process's first GETs
    /// to an origin); nil: never.
    public var hedging: HTTPHedging?
    /// The most redirects (301, 302, 303, 307, 308) the first GET follows; the ranges after
    /// it go to the last location, under that location's own ETag. 0: a redirect is an error.
    public var maxRedirects: Int
    /// Trust roots, proxy and timeouts of the client the source sends with when neither
    /// `client` nor `pool` is given (the process's shared pool for these options); for a
    /// `client` or a `pool`, only the idle limit of each request applies.
    public var connection: HTTPConnectionOptions
    /// A client of the caller's to send with (its configuration then applies: it should
    /// not follow redirects); nil: the client of `pool`, else of the process's shared pool
    /// for `connection` (`HTTPClientPool.shared(connection:)`).
    public var client: HTTPClient?
    /// The connection pool to send with when `client` is nil: every source with the same
    /// pool shares its client (its `connection` then applies, not this one's); the pool's
    /// owner shuts it down. nil (and no `client`): `HTTPClientPool.shared(connection:)`,
    /// never a client of the source's own.
    public var pool: HTTPClientPool?
    /// The hook for each request (see `Prepare`); nil: requests go as made.
    public var prepare: Prepare?
    /// Makes the check of a read that goes whole from the object's first byte to its end
    /// (see `HTTPWholeObjectCheck`), when the source hands out its first byte at offset 0
    /// (nil from the closure: no check); nil: none. `S3Sources` sets one that checks the
    /// store's `FULL_OBJECT` checksum, unless the caller's options have one.
    public var wholeObjectCheck: (@Sendable (HTTPObjectFacts) -> (any HTTPWholeObjectCheck)?)? = nil

    /// Options with the given values (8 MiB blocks, three read ahead, the default retry
    /// policy, 5 redirects, connection options from the environment, the shared pool
    /// for them unless a `client` or a `pool` is given, no hook, 1 KiB/s over 30 s at least, hedging
    /// after 100 ms of silence at least, 250 ms for the first GET).
    public init(
        blockSize: Int = defaultBlockSize, readAhead: Int = defaultReadAhead,
        connection: HTTPConnectionOptions = .fromEnvironment(), client: HTTPClient? = nil, prepare: Prepare? = nil,
        retry: HTTPRetryPolicy = HTTPRetryPolicy(), maxRedirects: Int = defaultMaxRedirects,
        pool: HTTPClientPool? = nil,
        minimumRate: HTTPMinimumRate? = .standard, hedging: HTTPHedging? = .standard
    ) {
        self.pool = pool
        self.minimumRate = minimumRate
        self.hedging = hedging
        self.blockSize = max(blockSize, 64 << 10)
        self.readAhead = max(readAhead, 0)
        self.retry = retry
        self.maxRedirects = max(maxRedirects, 0)
        self.connection = connection
        self.client = client
        self.prepare = prepare
    }
}
