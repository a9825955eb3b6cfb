import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A fault-injecting HTTP proxy on 127.0.0.1 in front of a real server (the repository's
/// `scripts/fault-proxy`): it forwards every request, except those a ``Rule`` picks, which it
/// damages, refuses, drops or delays, and it logs every request it saw, so that a test can
/// assert the faults and the client's retries.
///
/// ```swift
/// let store = try await SwiftStoreTestServer.shared()
/// let proxy = try await FaultProxy.start(upstream: store.endpoint)
/// defer { proxy.stop() }
/// try await proxy.setRules([.corrupt(method: "PUT", path: "partNumber=2")])
/// // … upload through proxy.endpoint …
/// let parts = try await proxy.log().filter { $0.target.contains("partNumber=2") }
/// ```
public final class FaultProxy: Sendable {
    /// The URL to send requests to instead of the upstream's, e.g. `http://127.0.0.1:41235`.
    public let endpoint: String
    private let process: LifelineProcess
    private let session = Session()

    /// What to do to the requests a rule picks.
    public enum Action: Sendable, Equatable {
        /// Flip every bit of the body's byte at `offset` (nil: the middle one) and forward it.
        case corrupt(offset: Int? = nil)
        /// Answer `status` with an S3-style XML error whose `Code` is `code` (nil: one that
        /// fits the status, e.g. `ServiceUnavailable`); the upstream never sees the request.
        case status(Int, code: String? = nil)
        /// Read `afterBytes` of the body (nil: half) and reset the connection.
        case drop(afterBytes: Int? = nil)
        /// Wait, then forward.
        case delay(seconds: Double)
        /// Forward, then relay the answer's head and only `afterBytes` of its body (nil: half;
        /// an answer without a body is cut inside its head), and close the connection cleanly.
        case cut(afterBytes: Int? = nil)
    }

    /// Which requests to damage, and how. A request is picked when its method equals `method`
    /// (if given) and `path` (a regular expression, if given) occurs in its target (path and
    /// query); the rule acts on the `nth` such request and the `times - 1` after it (`times`
    /// 0: all from the `nth` on). The first rule that acts on a request wins.
    public struct Rule: Sendable, Equatable {
        /// The request method to match (nil: any).
        public var method: String?
        /// A regular expression to find in the request target (nil: any).
        public var path: String?
        /// The first matching request to act on (1: the first).
        public var nth: Int
        /// How many matching requests to act on from the `nth` (0: all).
        public var times: Int
        /// What to do to them.
        public var action: Action

        /// A rule; see the type's description.
        public init(method: String? = nil, path: String? = nil, nth: Int = 1, times: Int = 1, action: Action) {
            self.method = method
            self.path = path
            self.nth = nth
            self.times = times
            self.action = action
        }

        /// Damages one byte of the body of the `nth` matching request (and `times - 1` more).
        public static func corrupt(
            method: String? = nil, path: String? = nil, nth: Int = 1, times: Int = 1, offset: Int? = nil
        ) -> Rule {
            Rule(method: method, path: path, nth: nth, times: times, action: .corrupt(offset: offset))
        }

        /// Answers `status` (e.g. 500, 503) to the `nth` matching request (and `times - 1` more),
        /// with an S3 error `code` (nil: one that fits the status).
        public static func status(
            _ status: Int, code: String? = nil, method: String? = nil, path: String? = nil, nth: Int = 1,
            times: Int = 1
        ) -> Rule {
            Rule(method: method, path: path, nth: nth, times: times, action: .status(status, code: code))
        }

        /// Drops the connection of the `nth` matching request mid-body (and `times - 1` more).
        public static func drop(
            method: String? = nil, path: String? = nil, nth: Int = 1, times: Int = 1, afterBytes: Int? = nil
        ) -> Rule {
            Rule(method: method, path: path, nth: nth, times: times, action: .drop(afterBytes: afterBytes))
        }

        /// Delays the `nth` matching request (and `times - 1` more) by `seconds`.
        public static func delay(
            _ seconds: Double, method: String? = nil, path: String? = nil, nth: Int = 1, times: Int = 1
        ) -> Rule {
            Rule(method: method, path: path, nth: nth, times: times, action: .delay(seconds: seconds))
        }

        /// Cuts the answer to the `nth` matching request (and `times - 1` more) mid-body: the
        /// upstream got the request, the client gets the head and part of the body.
        public static func cut(
            method: String? = nil, path: String? = nil, nth: Int = 1, times: Int = 1, afterBytes: Int? = nil
        ) -> Rule {
            Rule(method: method, path: path, nth: nth, times: times, action: .cut(afterBytes: afterBytes))
        }

        var json: [String: Any] {
            var object: [String: Any] = ["nth": nth, "times": times]
            if let method { object["method"] = method }
            if let path { object["path"] = path }
            switch action {
            case .corrupt(let offset):
                object["action"] = "corrupt"
                if let offset { object["offset"] = offset }
            case .status(let status, let code):
                object["action"] = "status"
                object["status"] = status
                if let code { object["code"] = code }
            case .drop(let afterBytes):
                object["action"] = "drop"
                if let afterBytes { object["after_bytes"] = afterBytes }
            case .delay(let seconds):
                object["action"] = "delay"
                object["seconds"] = seconds
            case .cut(let afterBytes):
                object["action"] = "cut"
                if let afterBytes { object["after_bytes"] = afterBytes }
            }
            return object
        }
    }

    /// A request the proxy saw.
    public struct Seen: Decodable, Sendable, Equatable {
        /// The request's method.
        public let method: String
        /// Its target: path and query, as sent.
        public let target: String
        /// Its headers, names lower-cased.
        public let headers: [String: String]
        /// The body bytes received (for a dropped request: before the drop).
        public let bodyBytes: Int
        /// `forward`, or the action of the rule that acted: `corrupt`, `status`, `drop`, `delay`, `cut`.
        public let action: String
        /// The index of the rule that acted, nil when none did.
        public let rule: Int?
        /// The status relayed from the upstream or sent by the proxy; nil when dropped (or failed).
        public let status: Int?

        enum CodingKeys: String, CodingKey {
            case method, target, headers, action, rule, status
            case bodyBytes = "body_bytes"
        }
    }

    /// Starts a proxy to `upstream` (e.g. a store's ``SwiftStoreTestServer/endpoint``) on a free port.
    public static func start(upstream: String) async throws -> FaultProxy {
        try await SwiftStoreTestServer.offThePool { try FaultProxy(upstream: upstream) }
    }

    private init(upstream: String) throws {
        let errFile = FileManager.default.temporaryDirectory.appendingPathComponent("fault-proxy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: errFile) }
        let process = try LifelineProcess("fault-proxy", [upstream], stderrFile: errFile.path)
        struct Started: Decodable { let endpoint: String }
        guard let started = try? JSONDecoder().decode(Started.self, from: Data(process.line.utf8)) else {
            process.stop()
            throw SwiftStoreTestServer.Failure(description: "fault-proxy printed \(process.line)")
        }
        self.endpoint = started.endpoint
        self.process = process
    }

    /// Replaces the rules (and restarts their counts).
    public func setRules(_ rules: [Rule]) async throws {
        let body = try JSONSerialization.data(withJSONObject: rules.map(\.json))
        _ = try await control("PUT", "rules", body: body)
    }

    /// Every request seen since the start (or ``clearLog()``), in arrival order.
    public func log() async throws -> [Seen] {
        try JSONDecoder().decode([Seen].self, from: try await control("GET", "log"))
    }

    /// Forgets the requests seen so far.
    public func clearLog() async throws {
        _ = try await control("DELETE", "log")
    }

    /// Stops the proxy and waits for it.
    public func stop() {
        process.stop()
    }

    deinit { stop() }

    private func control(_ method: String, _ name: String, body: Data? = nil) async throws -> Data {
        var request = URLRequest(url: URL(string: endpoint + "/__fault-proxy__/" + name)!)
        request.httpMethod = method
        request.httpBody = body
        let (data, response) = try await session.send(request)
        guard response.statusCode == 200 else {
            throw SwiftStoreTestServer.Failure(
                description: "fault-proxy: \(method) \(name) answered \(response.statusCode): "
                    + String(decoding: data, as: UTF8.self))
        }
        return data
    }
}
