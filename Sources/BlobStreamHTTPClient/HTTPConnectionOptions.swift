import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore
import NIOSSL

/// How an AsyncHTTPClient client of this module connects: the trust roots HTTPS adds, the
/// proxy, and the connect and idle limits.
///
/// ```swift
/// var connection = HTTPConnectionOptions.fromEnvironment(caBundle: "/etc/ssl/my-ca.pem")
/// connection.idleTimeout = .seconds(30)
/// let source = HTTPRangeDataSource(url: url, options: HTTPRangeOptions(connection: connection))
/// ```
///
/// Trust: the system's roots always apply; `caBundle` (a PEM file of one or more
/// certificates) adds its certificates to them, for servers whose certificate a private CA
/// signed. Proxies: `httpsProxy` carries `https://` requests through an HTTP proxy with
/// `CONNECT` (the TLS session runs end to end through the tunnel); `httpProxy` carries
/// `http://` requests (sent to the proxy in absolute form); hosts matched by `noProxy` go
/// direct.
public struct HTTPConnectionOptions: Sendable, Hashable {
    /// A PEM file whose certificates are trusted besides the system's roots; nil: the
    /// system's roots only.
    public var caBundle: String?
    /// The proxy for `https://` URLs (host and port of an HTTP proxy that accepts `CONNECT`).
    public var httpsProxy: HTTPProxy?
    /// The proxy for `http://` URLs.
    public var httpProxy: HTTPProxy?
    /// Hosts that bypass the proxies: exact names, domain suffixes (`example.com` and
    /// `.example.com` both match `a.example.com`), or `*` for every host.
    public var noProxy: [String]
    /// The longest wait for a connection (TCP, and the proxy's tunnel): 10 s by default.
    public var connectTimeout: TimeAmount
    /// The longest time without a byte from the server once a request is sent: 60 s.
    public var idleTimeout: TimeAmount
    /// The most connections a client keeps to one host (scheme, host and port) at once: 64
    /// by default (AsyncHTTPClient's own default is 8). One client serves every source of a
    /// pool, and each remote read holds a connection for its streamed first answer and up to
    /// `readAhead` more for its ranges: with 8, the ninth source open on one store waited for
    /// a connection, and a request that waits longer than `connectTimeout` fails.
    public var maximumConnectionsPerHost: Int = HTTPConnectionOptions.defaultMaximumConnectionsPerHost

    /// The default of `maximumConnectionsPerHost`: 64.
    public static let defaultMaximumConnectionsPerHost = 64

    /// An HTTP proxy's address.
    public struct HTTPProxy: Sendable, Hashable {
        /// The proxy's host name or address.
        public var host: String
        /// The proxy's port.
        public var port: Int
        /// Makes a proxy address.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Reads a proxy variable's value: `http://host:port`, `host:port` or `host` (port
        /// 80 when none is given). Nil for an empty value or one with no host.
        public init?(environmentValue value: String) {
            let text = value.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { return nil }
            let withScheme = text.contains("://") ? text : "http://" + text
            guard let url = URL(string: withScheme), let host = url.host, !host.isEmpty else { return nil }
            self.host = host
            self.port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        }
    }

    /// Options with the given values (by default: no extra trust roots, no proxy, 10 s to
    /// connect, 60 s of silence at most).
    public init(
        caBundle: String? = nil, httpsProxy: HTTPProxy? = nil, httpProxy: HTTPProxy? = nil, noProxy: [String] = [],
        connectTimeout: TimeAmount = .seconds(10), idleTimeout: TimeAmount = .seconds(60)
    ) {
        self.caBundle = caBundle
        self.httpsProxy = httpsProxy
        self.httpProxy = httpProxy
        self.noProxy = noProxy
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
    }

    /// Options as the environment asks for them, the way curl and awscli read it:
    /// - the CA bundle: `caBundle` when given, else `AWS_CA_BUNDLE`, else `SSL_CERT_FILE`
    ///   (each added to the system's roots);
    /// - proxies: `HTTPS_PROXY` or `https_proxy`; `HTTP_PROXY` or `http_proxy`;
    ///   `NO_PROXY` or `no_proxy` (comma-separated).
    public static func fromEnvironment(
        caBundle: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> HTTPConnectionOptions {
        func value(_ names: String...) -> String? {
            names.lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        }
        return HTTPConnectionOptions(
            caBundle: caBundle ?? value("AWS_CA_BUNDLE", "SSL_CERT_FILE"),
            httpsProxy: value("HTTPS_PROXY", "https_proxy").flatMap(HTTPProxy.init(environmentValue:)),
            httpProxy: value("HTTP_PROXY", "http_proxy").flatMap(HTTPProxy.init(environmentValue:)),
            noProxy: (value("NO_PROXY", "no_proxy") ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty })
    }

    /// The proxy a request to `url` goes through (nil: direct).
    public func proxy(for url: URL) -> HTTPProxy? {
        guard let host = url.host?.lowercased() else { return nil }
        let proxy = url.scheme?.lowercased() == "https" ? httpsProxy : httpProxy
        guard let proxy else { return nil }
        for entry in noProxy.map({ $0.lowercased() }) {
            let suffix = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
            if entry == "*" || host == suffix || host.hasSuffix("." + suffix) { return nil }
        }
        return proxy
    }

    /// The configuration of a client that reaches `url` with these options: redirects are
    /// not followed (a ranged read must not silently change objects), the connect and idle
    /// limits, the proxy, and the trust roots.
    ///
    /// - Throws: `BlobStreamError` `.notFound` when the CA bundle cannot be read, naming it.
    public func clientConfiguration(for url: URL) throws -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: connectTimeout, read: idleTimeout)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(maximumConnectionsPerHost, 1)
        if let proxy = proxy(for: url) { configuration.proxy = .server(host: proxy.host, port: proxy.port) }
        if let caBundle {
            // Checked now (readable, holding a PEM certificate), parsed when the first TLS
            // connection is made: a run that reaches only http:// URLs never pays for it (a
            // system bundle of 140 certificates takes about 7 ms).
            let contents: Data
            do {
                contents = try Data(contentsOf: URL(fileURLWithPath: caBundle))
            } catch {
                throw BlobStreamError(
                    .notFound, "cannot read the CA bundle '\(caBundle)': \(error) (a PEM file of certificates)",
                    cause: error)
            }
            guard contents.range(of: Data("-----BEGIN CERTIFICATE-----".utf8)) != nil else {
                throw BlobStreamError(.corrupt, "the CA bundle '\(caBundle)' holds no PEM certificate")
            }
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(caBundle)]
            configuration.tlsConfiguration = tls
        }
        return configuration
    }
}
