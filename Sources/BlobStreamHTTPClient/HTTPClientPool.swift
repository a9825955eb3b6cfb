import AsyncHTTPClient
import BlobStream
import Foundation

/// One connection pool for every remote source of a registry or a tool run, as
/// AsyncHTTPClient's convention asks (one shared `HTTPClient`, not one per request or per
/// source): the sources that name it in `HTTPRangeOptions.pool` send with its client and
/// reuse each other's connections.
///
/// ```swift
/// let pool = HTTPClientPool(connection: .fromEnvironment())
/// var options = HTTPRangeOptions()
/// options.pool = pool
/// HTTPSources.register(in: registry, options: options)
/// S3Sources.register(in: registry, options: options) { try S3Configuration.resolve() }
/// // … read any number of http(s):// and s3:// sources …
/// try await pool.shutdown()   // its owner shuts it down, once every source is closed
/// ```
///
/// A source, an `S3Client` or an uploader given no pool sends with the process's shared pool
/// for its connection options (`HTTPClientPool.shared(connection:)`), as AsyncHTTPClient's
/// `HTTPClient.shared` is shared: never a client of its own.
///
/// The pool holds one client per route: direct, or through the proxy `connection` gives a
/// URL (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`), each made on first use with
/// `connection.clientConfiguration(for:)` (trust roots, connect and idle limits, redirects
/// left to the source). A source never shuts down a pool's client; the pool's owner calls
/// `shutdown()` (or `syncShutdown()` off the event loops), after which asking for a client
/// fails (`.closed`). A pool released without it shuts its clients down in the background.
public final class HTTPClientPool: Sendable {
    /// How the pool's clients connect.
    public let connection: HTTPConnectionOptions
    /// True for a pool of the process (`shared(connection:)`), which is never shut down.
    public let isShared: Bool
    /// True when the clients wait for the server's answer as long as it takes (uploads: an
    /// upload's own limits watch it), rather than `connection.idleTimeout`.
    private let answersWithoutIdleLimit: Bool
    private let clients = Locked<(byRoute: [String: HTTPClient], isShutDown: Bool)>(([:], false))

    /// A pool whose clients connect with `connection`; no client is made until one is asked for.
    public convenience init(connection: HTTPConnectionOptions = .fromEnvironment()) {
        self.init(connection: connection, isShared: false, answersWithoutIdleLimit: false)
    }

    private init(connection: HTTPConnectionOptions, isShared: Bool, answersWithoutIdleLimit: Bool) {
        self.connection = connection
        self.isShared = isShared
        self.answersWithoutIdleLimit = answersWithoutIdleLimit
    }

    /// The process's pool for `connection` (one per distinct value, made on first use, never
    /// shut down: `shutdown()` does nothing for it): what a source, an `S3Client` or an
    /// uploader given no pool sends with.
    ///
    /// ```swift
    /// let source = HTTPRangeDataSource(url: url)  // sends with HTTPClientPool.shared(connection: .fromEnvironment())
    /// ```
    public static func shared(connection: HTTPConnectionOptions) -> HTTPClientPool {
        sharedPool(connection: connection, answersWithoutIdleLimit: false)
    }

    /// The process's pool for uploads that connect with `connection` and wait for their
    /// answer as long as their own limits allow.
    static func sharedForUploads(connection: HTTPConnectionOptions) -> HTTPClientPool {
        sharedPool(connection: connection, answersWithoutIdleLimit: true)
    }

    private struct SharedKey: Hashable {
        var connection: HTTPConnectionOptions
        var answersWithoutIdleLimit: Bool
    }

    private static let sharedPools = Locked<[SharedKey: HTTPClientPool]>([:])

    private static func sharedPool(connection: HTTPConnectionOptions, answersWithoutIdleLimit: Bool) -> HTTPClientPool {
        let key = SharedKey(connection: connection, answersWithoutIdleLimit: answersWithoutIdleLimit)
        return sharedPools.withLock { pools in
            if let pool = pools[key] { return pool }
            let pool = HTTPClientPool(
                connection: connection, isShared: true, answersWithoutIdleLimit: answersWithoutIdleLimit)
            pools[key] = pool
            return pool
        }
    }

    /// The client that serves `url`: the one of its route, made on first use.
    ///
    /// - Throws: `BlobStreamError` `.closed` after `shutdown()`; the configuration's error
    ///   (an unreadable CA bundle), naming it.
    public func client(for url: URL) throws(BlobStreamError) -> HTTPClient {
        let route = connection.proxy(for: url).map { "proxy \($0.host):\($0.port)" } ?? "direct"
        let result: Result<HTTPClient, BlobStreamError> = clients.withLock { clients in
            guard !clients.isShutDown else {
                return .failure(BlobStreamError(.closed, "\(url.absoluteString): the HTTP client pool is shut down"))
            }
            if let client = clients.byRoute[route] { return .success(client) }
            do {
                var configuration = try connection.clientConfiguration(for: url)
                if answersWithoutIdleLimit { configuration.timeout.read = nil }
                let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
                clients.byRoute[route] = client
                return .success(client)
            } catch let error as BlobStreamError {
                return .failure(error)
            } catch {
                return .failure(BlobStreamError(.sourceFailed, "\(url.absoluteString): \(error)", cause: error))
            }
        }
        return try result.get()
    }

    /// The clients made so far (one per route used).
    public var clientCount: Int { clients.withLock { $0.byRoute.count } }

    /// Shuts down every client of the pool (requests still running fail); later
    /// `client(for:)` calls fail with `.closed`. Does nothing for a shared pool.
    public func shutdown() async throws {
        guard !isShared else { return }
        for client in takeAll() { try await client.shutdown() }
    }

    /// `shutdown()` for code outside Swift concurrency; never on an event loop.
    public func syncShutdown() throws {
        guard !isShared else { return }
        for client in takeAll() { try client.syncShutdown() }
    }

    /// A pool released without `shutdown()` shuts its clients down in the background.
    deinit {
        for client in takeAll() { client.shutdown { _ in } }
    }

    private func takeAll() -> [HTTPClient] {
        clients.withLock { clients in
            defer { clients = ([:], true) }
            return Array(clients.byRoute.values)
        }
    }
}
