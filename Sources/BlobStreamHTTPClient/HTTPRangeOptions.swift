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

    /// A request as the source makes it; public so that a hook can be tested alone.
    public init(url: URL, method: HTTPMethod = .GET, headers: HTTPHeaders = [:], range: ClosedRange<Int64>) {
        self.url = url
        self.method = method
        self.headers = headers
        self.range = range
    }
}

/// How `HTTPRangeDataSource` reads: the block size, the connection (trust roots, proxy,
/// timeouts), an optional client of the caller's, and the hook that prepares each request.
public struct HTTPRangeOptions: Sendable {
    /// Called for every request after its `Range` and `If-Match` headers are set, just
    /// before it is sent, on the thread that asks for the bytes (the reading thread), except
    /// for the `HEAD` (no `Range`) that follows a first GET answered 416 without the
    /// object's length, prepared on an event loop of the client: the hook must not block.
    /// It may add headers or sign the request (by `request.method`); an error it throws
    /// fails the read (`.sourceFailed`, naming the URL, the error as cause). Synchronous on
    /// purpose: reading never depends on the cooperative thread pool.
    public typealias Prepare = @Sendable (inout HTTPRangeRequest) throws -> Void

    /// The default block: 4 MiB per ranged GET.
    public static let defaultBlockSize = 4 << 20

    /// The bytes one GET asks for (at least 64 KiB).
    public var blockSize: Int
    /// How many blocks after the one being read are asked for ahead (GETs in flight while
    /// a block is read): 1 by default; more helps on links with long round trips or servers
    /// slow to answer each GET. The memory held is about `blockSize × (readAhead + 1)`.
    public var readAhead: Int
    /// Trust roots, proxy and timeouts of the client the source makes (ignored for them
    /// when `client` is given, except for the idle limit of each request).
    public var connection: HTTPConnectionOptions
    /// A client of the caller's to send with (its configuration then applies: it should
    /// not follow redirects); nil: the source makes one, and shuts it down at `close()`.
    public var client: HTTPClient?
    /// The hook for each request (see `Prepare`); nil: requests go as made.
    public var prepare: Prepare?

    /// Options with the given values (4 MiB blocks, one read ahead, connection options from
    /// the environment, a client of the source's own, no hook).
    public init(
        blockSize: Int = defaultBlockSize, readAhead: Int = 1, connection: HTTPConnectionOptions = .fromEnvironment(),
        client: HTTPClient? = nil, prepare: Prepare? = nil
    ) {
        self.blockSize = max(blockSize, 64 << 10)
        self.readAhead = max(readAhead, 0)
        self.connection = connection
        self.client = client
        self.prepare = prepare
    }
}
