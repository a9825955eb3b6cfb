import AsyncHTTPClient
import BlobStream
import BlobStreamHTTPClient
import BlobStreamUpload
import Foundation
import NIOCore
import NIOHTTP1

/// Requests to an S3 store, signed with SigV4, sent with AsyncHTTPClient.
///
/// ```swift
/// let client = S3Client(configuration: try S3Configuration.resolve())
/// let etag = try await client.putObject(S3Location(bucket: "photos", key: "a.jpg"), body: bytes)
/// ```
///
/// Every failure is a `BlobStreamError` that names the operation, bucket and key, with S3's
/// error code, message, the HTTP status and request id when the store answered with an error
/// document (`s3ErrorCode` gives S3's code).
///
/// HTTPS with a private CA or through a proxy: make the client from connection options
/// (the same ones `S3Sources` reads with); it sends with the process's shared pool for them:
///
/// ```swift
/// let connection = HTTPConnectionOptions.fromEnvironment(caBundle: "/etc/ssl/private-ca.pem")
/// let client = try S3Client(configuration: try S3Configuration.resolve(), connection: connection)
/// // … uploads with S3Uploader(client: client) …
/// ```
public struct S3Client: Sendable {
    /// Where the store is and the keys to sign with.
    public var configuration: S3Configuration
    /// The HTTP client requests go through (`S3Client.sharedHTTPClient` by default).
    public var httpClient: HTTPClient
    /// The longest one request may take (an 8 MiB part at 1 MiB/s takes 8 s).
    public var requestTimeout: TimeAmount

    /// A client for the store `configuration` names.
    public init(
        configuration: S3Configuration, httpClient: HTTPClient = S3Client.sharedHTTPClient,
        requestTimeout: TimeAmount = .minutes(5)
    ) {
        self.configuration = configuration
        self.httpClient = httpClient
        self.requestTimeout = requestTimeout
    }

    /// A client for the store `configuration` names that connects as `connection` says:
    /// its CA bundle added to the system's trust roots (`--ca-bundle`, `AWS_CA_BUNDLE`), the
    /// proxy for the endpoint (`HTTPS_PROXY` through `CONNECT`, `HTTP_PROXY`, unless
    /// `NO_PROXY` names the host), its connect and idle limits. Redirects are not followed
    /// and a failed connection is reported at once, as with `sharedHTTPClient`.
    ///
    /// It sends with the process's shared pool for `connection`
    /// (`HTTPClientPool.shared(connection:)`): clients made with the same options share
    /// connections, and there is nothing to shut down.
    ///
    /// - Throws: `BlobStreamError` `.invalidConfiguration` when the CA bundle cannot be read, naming it.
    public init(
        configuration: S3Configuration, connection: HTTPConnectionOptions, requestTimeout: TimeAmount = .minutes(5)
    ) throws(BlobStreamError) {
        try self.init(
            configuration: configuration, pool: .shared(connection: connection), requestTimeout: requestTimeout)
    }

    /// A client for the store `configuration` names that sends with `pool`'s client for the
    /// endpoint: the one the remote sources of the same pool use (`HTTPRangeOptions.pool`),
    /// so that uploads and reads share connections. The pool's owner shuts it down.
    ///
    /// ```swift
    /// let pool = HTTPClientPool(connection: .fromEnvironment())
    /// let client = try S3Client(configuration: try S3Configuration.resolve(), pool: pool)
    /// // … uploads with S3Uploader(client: client), reads with HTTPRangeOptions(pool: pool) …
    /// try await pool.shutdown()
    /// ```
    ///
    /// - Throws: `BlobStreamError` `.invalidConfiguration` when the pool cannot make a client (an
    ///   unreadable CA bundle, a pool already shut down), naming the endpoint.
    public init(
        configuration: S3Configuration, pool: HTTPClientPool, requestTimeout: TimeAmount = .minutes(5)
    ) throws(BlobStreamError) {
        let endpoint = Self.endpointURL(configuration)
        do {
            self.httpClient = try pool.client(for: endpoint)
        } catch {
            throw BlobStreamError.s3(.invalidConfiguration, "\(endpoint.absoluteString): \(error)", cause: error)
        }
        self.configuration = configuration
        self.requestTimeout = requestTimeout
    }

    /// The process's HTTP client for S3 (never shut down, like `HTTPClient.shared`): a
    /// refused or failed connection is reported at once rather than tried again until the
    /// request's deadline (the uploader retries whole requests itself, with backoff); 10 s
    /// to connect; 60 s without a byte read is a timeout; redirects are not followed; up to
    /// `HTTPConnectionOptions.defaultMaximumConnectionsPerHost` (64) connections to one
    /// endpoint.
    public static let sharedHTTPClient: HTTPClient = {
        // The shared pool of the default options: no CA bundle to read, never shut down, so
        // asking it for a client cannot fail.
        try! HTTPClientPool.shared(connection: HTTPConnectionOptions()).client(for: URL(string: "http://127.0.0.1")!)
    }()

    /// An answer: status, header fields and body.
    public struct Response: Sendable {
        /// The HTTP status code.
        public var statusCode: Int
        /// The header fields.
        public var headers: HTTPHeaders
        /// The body (error documents and listings are small; at most 64 MiB are read).
        public var body: ByteBuffer
    }

    /// Sends one signed request and returns a 2xx answer.
    ///
    /// - Parameters:
    ///   - operation: how messages name the request (`"UploadPart 3"`).
    ///   - method: the HTTP method.
    ///   - location: the object the request is about; nil for a bucket's or the service's.
    ///   - bucket: the bucket, when `location` is nil.
    ///   - query: decoded parameters (`("uploadId", id)`); a flag has an empty value.
    ///   - headers: extra fields (`Content-MD5`, `Content-Type`, `x-amz-meta-…`); they are signed.
    ///   - body: the request's body, hashed for the signature (none: an empty body).
    /// - Throws: `BlobStreamError` naming the request: for an answer with an error status,
    ///   `.permissionDenied` (refused credentials, 403), `.notFound` (a missing key, bucket
    ///   or upload, 404), `.corrupt` (a body that does not match its check), `.timedOut`,
    ///   else `.uploadFailed` for an upload's request and `.httpFailed` for another, with S3's
    ///   code (`s3ErrorCode`), the status and request id in the message; `.ioFailed` when the
    ///   store cannot be reached, `.timedOut` when it does not answer in time;
    ///   `CancellationError` when the task is cancelled.
    public func send(
        _ operation: String, method: HTTPMethod, location: S3Location?, bucket: String? = nil,
        query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = [],
        body: ByteBuffer? = nil
    ) async throws -> Response {
        try await send(
            operation, method: method, location: location, bucket: bucket, query: query, headers: headers,
            payload: body.map { .bytes($0) } ?? .empty)
    }

    /// What a request sends: nothing, bytes in memory, or a body streamed from a source
    /// whose SHA-256 was computed before (a part too large for one buffer).
    enum Payload: Sendable {
        case empty
        case bytes(ByteBuffer)
        case streamed(StreamedBody)
    }

    /// `send` with any `Payload`; `payloadHash` when computed before (the SHA-256, or
    /// `UNSIGNED-PAYLOAD` when a signed header binds the body), else the body's SHA-256.
    func send(
        _ operation: String, method: HTTPMethod, location: S3Location?, bucket: String? = nil,
        query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = [],
        payload: Payload, payloadHash given: String? = nil
    ) async throws -> Response {
        let bucketName = location?.bucket ?? bucket
        let target = self.target(bucket: bucketName, key: location?.key)
        let payloadHash: String
        switch payload {
        case _ where given != nil: payloadHash = given!
        case .empty: payloadHash = SigV4Signer.emptyPayloadHash
        case .bytes(let buffer): payloadHash = DigestPlan(sha256: true).digest(buffer).payloadHash
        case .streamed(let streamed): payloadHash = streamed.digest.payloadHash
        }
        var unsigned = SigV4Request(method: method.rawValue, path: target.path, query: query, headers: headers)
        unsigned.headers.append((name: "Host", value: target.host))
        let signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
        let signed = signer.sign(unsigned, payloadHash: payloadHash, date: Date())
        let query = signed.encodedQuery
        var request = HTTPClientRequest(
            url: target.base + signed.encodedPath + (query.isEmpty ? "" : "?" + query))
        request.method = method
        for (name, value) in signed.headers { request.headers.add(name: name, value: value) }
        // AsyncHTTPClient sets Content-Length from the body (0 for a PUT or POST without one).
        switch payload {
        case .bytes(let body): request.body = .bytes(body)
        case .streamed(let streamed): request.body = streamed.makeBody()
        case .empty: if method == .PUT || method == .POST { request.body = .bytes(ByteBuffer()) }
        }
        let what = "\(operation) \(location?.description ?? bucketName.map { "s3://\($0)" } ?? "")"
        let response: HTTPClientResponse
        let collected: ByteBuffer
        do {
            response = try await httpClient.execute(request, timeout: requestTimeout)
            collected = try await response.body.collect(upTo: 64 << 20)
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as StreamedBody.SourceFailure {
            // A streamed body's source failed: the store is not to blame (nor tried again).
            throw error.error
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout
        {
            throw BlobStreamError.s3(
                .timedOut, "\(what): no answer from \(target.base) in time", kind: .timeout, cause: error)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            if Self.isTLSFailure(error) {
                throw BlobStreamError.s3(
                    .ioFailed,
                    "\(what): the TLS connection to \(target.base) failed (if a private CA signed the store's "
                        + "certificate, add it with HTTPConnectionOptions.caBundle or AWS_CA_BUNDLE)", kind: .tls,
                    cause: error)
            }
            throw BlobStreamError.s3(
                .ioFailed, "\(what): cannot reach \(target.base)", kind: .connection, cause: error)
        }
        let status = Int(response.status.code)
        guard (200..<300).contains(status) else {
            throw Self.error(operation, what, status: status, headers: response.headers, body: collected)
        }
        return Response(statusCode: status, headers: response.headers, body: collected)
    }

    /// The operations of an upload: the store refusing one fails the upload (`.uploadFailed`
    /// unless a more precise code says why); any other request's refusal is `.httpFailed`.
    static let uploadOperations = ["PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"]

    /// The error an answer that is not 2xx (or a 200 with an `<Error>` document) means, for
    /// `operation` (`"UploadPart 3"`), named in messages as `what` (with the bucket and key).
    static func error(_ operation: String, _ what: String, status: Int, headers: HTTPHeaders, body: ByteBuffer)
        -> BlobStreamError
    {
        let document = try? S3XMLElement.parse(Data(body.readableBytesView))
        let requestID = document?["RequestId"] ?? headers.first(name: "x-amz-request-id")
        let fallback: BlobStreamError.Code =
            uploadOperations.contains(where: { operation.hasPrefix($0) }) ? .uploadFailed : .httpFailed
        if let document, document.name == "Error", let s3Code = document["Code"] {
            let message = document["Message"].map { ": \($0)" } ?? ""
            return BlobStreamError.s3(
                S3FailureDetails.code(forAnswer: s3Code, status: status, fallback: fallback),
                "\(what): \(s3Code)\(message)", kind: .answer, s3Code: s3Code, statusCode: status,
                requestID: requestID)
        }
        let s3Code: String? =
            switch status {
            case 403: "AccessDenied"
            case 404: "NotFound"
            case 500..<600: "InternalError"
            default: nil
            }
        return BlobStreamError.s3(
            S3FailureDetails.code(
                forAnswer: s3Code, status: status, fallback: s3Code == nil ? .invalidResponse : fallback),
            "\(what): the store answered HTTP \(status)", kind: .answer, s3Code: s3Code, statusCode: status,
            requestID: requestID)
    }

    /// A failed TLS handshake (an untrusted certificate, a wrong host name): trying again
    /// cannot help.
    /// (NIOSSL's errors are told by their names: this module does not link NIOSSL itself.)
    static func isTLSFailure(_ error: any Error) -> Bool {
        let text = String(reflecting: error)
        return text.contains("NIOSSL") || text.contains("BoringSSL") || text.contains("CERTIFICATE_VERIFY")
    }

    /// The endpoint requests go to: the configuration's, else AWS's for the region.
    static func endpointURL(_ configuration: S3Configuration) -> URL {
        configuration.endpoint ?? URL(string: "https://s3.\(configuration.region).amazonaws.com")!
    }

    /// The URL's scheme and authority, the decoded path, and the `Host` value, for a
    /// bucket and key (path-style or virtual-hosted).
    func target(bucket: String?, key: String?) -> (base: String, path: String, host: String) {
        Self.target(configuration, bucket: bucket, key: key)
    }

    /// `target(bucket:key:)` for the store `configuration` names.
    static func target(_ configuration: S3Configuration, bucket: String?, key: String?) -> (
        base: String, path: String, host: String
    ) {
        let endpoint = Self.endpointURL(configuration)
        let scheme = endpoint.scheme?.lowercased() ?? "https"
        var host = endpoint.host ?? ""
        if host.contains(":") { host = "[\(host)]" } // IPv6 literal
        let defaultPort = scheme == "https" ? 443 : 80
        let portPart = endpoint.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        var prefix = endpoint.path
        while prefix.hasSuffix("/") { prefix.removeLast() }
        var path = prefix
        if let bucket {
            if configuration.usesPathStyle {
                path += "/" + bucket
            } else {
                host = bucket + "." + host
            }
        }
        path += "/" + (key ?? "")
        let authority = host + portPart
        return (base: "\(scheme)://\(authority)", path: path, host: authority)
    }

    /// The base64 MD5 of `bytes`, for `Content-MD5`.
    public static func contentMD5(_ bytes: ByteBuffer) -> String {
        DigestPlan(md5: true).digest(bytes).contentMD5!
    }

    /// The hex MD5 of `bytes`, as S3 gives a part's ETag (without quotes).
    public static func md5Hex(_ bytes: ByteBuffer) -> String {
        DigestPlan(md5: true).digest(bytes).md5Hex!
    }
}
