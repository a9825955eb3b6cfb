import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Swift's own object API with a tempauth token (`X-Auth-Token`): what tests use to check
/// what the store holds, independently of the S3 client under test.
///
/// In Swift terms an S3 bucket is a container and an S3 object an object. s3api keeps a
/// multipart upload in the container `BUCKET+segments`: a zero-byte marker `KEY/UPLOAD-ID`
/// from CreateMultipartUpload until it completes or is aborted, and the parts as
/// `KEY/UPLOAD-ID/PART-NUMBER`. Completing removes the marker and keeps the parts (the
/// object's segments); aborting removes both. So ``list(_:prefix:)`` of
/// `BUCKET+segments` with prefix `KEY/` shows leftovers: after an abort, nothing; after a
/// completion, exactly the object's parts and no marker.
public final class SwiftAPI: Sendable {
    /// An object as a container listing shows it.
    public struct StoredObject: Decodable, Equatable, Sendable {
        /// The object's name (for a multipart part: `KEY/UPLOAD-ID/PART-NUMBER`).
        public let name: String
        /// Its size in bytes (for an S3 multipart object: the whole object's).
        public let bytes: Int
        /// Its ETag as Swift lists it: the md5 of the bytes, except for a multipart object
        /// (whose S3 ETag is ``s3ETag``).
        public let hash: String
        /// Its content type.
        public let contentType: String?
        /// For an object completed by S3 multipart upload: S3's ETag, `"md5-of-md5s-N"` (quoted).
        public let s3ETag: String?

        enum CodingKeys: String, CodingKey {
            case name, bytes, hash
            case contentType = "content_type"
            case s3ETag = "s3_etag"
        }
    }

    /// A stored object's headers and bytes as `GET` returns them.
    public struct Fetched: Sendable {
        /// The HTTP status (200, or 404 when absent).
        public let status: Int
        /// The body.
        public let body: Data
        /// The response headers, names lower-cased.
        public let headers: [String: String]
    }

    private let authURL: String
    private let user: String
    private let key: String
    private let session: Session

    /// Swift's API at `endpoint` (e.g. a ``FaultProxy``'s, in front of the store) with the
    /// store's tempauth user; the storage URL follows the endpoint.
    public convenience init(endpoint: String, user: String = "test:tester", key: String = "testing") {
        self.init(authURL: endpoint + "/auth/v1.0", user: user, key: key)
    }

    init(authURL: String, user: String, key: String) {
        self.authURL = authURL
        self.user = user
        self.key = key
        self.session = Session()
    }

    /// A token and the storage URL, from tempauth.
    public func authenticate() async throws -> (token: String, storageURL: String) {
        var request = URLRequest(url: URL(string: authURL)!)
        request.setValue(user, forHTTPHeaderField: "X-Auth-User")
        request.setValue(key, forHTTPHeaderField: "X-Auth-Key")
        let (_, response) = try await session.send(request)
        guard response.statusCode == 200, let token = response.value(forHTTPHeaderField: "X-Auth-Token"),
            let storage = response.value(forHTTPHeaderField: "X-Storage-Url")
        else {
            throw SwiftStoreTestServer.Failure(description: "tempauth at \(authURL) answered \(response.statusCode)")
        }
        return (token, storage)
    }

    /// Creates the container (a bucket for S3); creating an existing one is no error.
    public func createContainer(_ container: String) async throws {
        let (status, _, _) = try await call("PUT", path(container))
        try expect(status, in: [201, 202], "PUT \(container)")
    }

    /// Stores `data` as `container/object` (the container must exist); returns the ETag.
    @discardableResult
    public func put(_ container: String, _ object: String, _ data: Data) async throws -> String {
        let (status, _, headers) = try await call("PUT", path(container, object), body: data)
        try expect(status, in: [201], "PUT \(container)/\(object)")
        return headers["etag"] ?? ""
    }

    /// Deletes `container/object` (a manifest with its segments); absent is no error.
    public func delete(_ container: String, _ object: String) async throws {
        // `multipart-manifest=delete` deletes a manifest and its segments, and refuses any
        // other object (200 with "Not an SLO manifest" in the body).
        let (found, _, headers) = try await call("HEAD", path(container, object))
        if found == 404 { return }
        let manifest = headers["x-static-large-object"]?.lowercased() == "true"
        let (status, _, _) = try await call(
            "DELETE", path(container, object) + (manifest ? "?multipart-manifest=delete" : ""))
        try expect(status, in: [200, 204, 404], "DELETE \(container)/\(object)")
    }

    /// `GET container/object`: status 404 when absent (no error).
    public func get(_ container: String, _ object: String) async throws -> Fetched {
        let (status, body, headers) = try await call("GET", path(container, object))
        try expect(status, in: [200, 404], "GET \(container)/\(object)")
        return Fetched(status: status, body: body, headers: headers)
    }

    /// The objects of `container` whose names start with `prefix` (all of them, page by
    /// page), or nil when the container does not exist.
    public func list(_ container: String, prefix: String = "") async throws -> [StoredObject]? {
        var all: [StoredObject] = []
        var marker = ""
        while true {
            let query = "?format=json&limit=1000&prefix=" + encode(prefix) + "&marker=" + encode(marker)
            let (status, body, _) = try await call("GET", path(container) + query)
            if status == 404 { return nil }
            try expect(status, in: [200, 204], "GET \(container)")
            let page = status == 204 ? [] : try JSONDecoder().decode([StoredObject].self, from: body)
            all += page
            guard let last = page.last else { return all }
            marker = last.name
        }
    }

    /// The containers of the account.
    public func containers() async throws -> [String] {
        struct Entry: Decodable { let name: String }
        let (status, body, _) = try await call("GET", "?format=json")
        try expect(status, in: [200, 204], "GET account")
        return status == 204 ? [] : try JSONDecoder().decode([Entry].self, from: body).map(\.name)
    }

    // MARK: - Plumbing

    private func path(_ container: String, _ object: String? = nil) -> String {
        "/" + encode(container) + (object.map { "/" + encode($0, keepSlash: true) } ?? "")
    }

    private func encode(_ text: String, keepSlash: Bool = false) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(.init(charactersIn: Unicode.Scalar(0)..<"\u{80}"))
        allowed.insert(charactersIn: "-._~" + (keepSlash ? "/" : ""))
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    private func expect(_ status: Int, in expected: Set<Int>, _ what: String) throws {
        guard expected.contains(status) else {
            throw SwiftStoreTestServer.Failure(description: "Swift API: \(what) answered \(status)")
        }
    }

    private func call(_ method: String, _ suffix: String, body: Data? = nil) async throws -> (
        Int, Data, [String: String]
    ) {
        // tempauth keeps tokens in memcached, which a busy 2-core machine sometimes fails to
        // answer within swift's memcache timeout: the proxy then answers 401 to a token it
        // has just made. Such a 401 is asked again with a new token, twice at most.
        var attempt = 1
        while true {
            let answer = try await callOnce(method, suffix, body: body)
            if answer.0 != 401 || attempt == 3 { return answer }
            attempt += 1
            // A pause before asking again: no event says memcached answers again.
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    private func callOnce(_ method: String, _ suffix: String, body: Data?) async throws -> (
        Int, Data, [String: String]
    ) {
        let (token, storage) = try await authenticate()
        var request = URLRequest(url: URL(string: storage + suffix)!)
        request.httpMethod = method
        request.setValue(token, forHTTPHeaderField: "X-Auth-Token")
        if let body {
            request.httpBody = body
            request.setValue(String(body.count), forHTTPHeaderField: "Content-Length")
        }
        let (data, response) = try await session.send(request)
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return (response.statusCode, data, headers)
    }
}

/// One ephemeral URLSession for the helper's requests.
final class Session: Sendable {
    private let session = URLSession(configuration: .ephemeral)

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else {
            throw SwiftStoreTestServer.Failure(description: "\(request.url?.absoluteString ?? ""): not an HTTP answer")
        }
        return (data, http)
    }
}
