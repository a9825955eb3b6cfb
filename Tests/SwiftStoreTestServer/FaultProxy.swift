import Foundation
import HTTPTestPeers

/// A fault-injecting HTTP proxy in this process, on 127.0.0.1 on a free port, in front of a
/// real server: it forwards every request, except those a ``Rule`` picks, which it damages,
/// refuses, drops or delays, and it logs every request it saw, so that a test can assert the
/// faults and the client's retries (and wait on that log, ``log(waitingUpTo:until:)``).
///
/// ```swift
/// let store = try await SwiftStoreTestServer.shared()
/// let proxy = try await FaultProxy.start(upstream: store.endpoint)
/// defer { proxy.stop() }
/// try await proxy.setRules([.corrupt(method: "PUT", path: "partNumber=2")])
/// // … upload through proxy.endpoint …
/// let parts = try await proxy.log().filter { $0.target.contains("partNumber=2") }
/// ```
///
/// Each request goes upstream on a connection of its own (`Connection: close`) and its
/// answer is relayed to its end; the client's connection closes after one exchange. The
/// proxy answers `Expect: 100-continue` itself.
public final class FaultProxy: Sendable {
    /// The URL to send requests to instead of the upstream's, e.g. `http://127.0.0.1:41235`.
    public let endpoint: String
    private let peer: SocketPeer
    private let state: FaultProxyState

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
        /// Forward, then relay the answer with `headers` set in its head (a field of the same
        /// name replaced): a store that says something else about what it stored.
        case rewrite(headers: [String: String])
        /// Answer `status` with `headers` and `body` (an XML document, say) itself; the upstream
        /// never sees the request.
        case answer(status: Int, headers: [String: String], body: String)
        /// Forward, then relay the answer with every bit of its body's byte at `offset` (nil:
        /// the middle one) flipped, its head untouched: a store that serves other bytes under
        /// the object's own ETag and checksum.
        case flipAnswer(offset: Int? = nil)
        /// A store down for `seconds`: from the request the rule first acts on, every request
        /// (whatever its method and path) is answered `status` until `seconds` have passed.
        case outage(seconds: Double, status: Int)

        /// The name a log entry gives it.
        var name: String {
            switch self {
            case .corrupt: "corrupt"
            case .status: "status"
            case .drop: "drop"
            case .delay: "delay"
            case .cut: "cut"
            case .rewrite: "rewrite"
            case .answer: "answer"
            case .flipAnswer: "flipAnswer"
            case .outage: "outage"
            }
        }
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

        /// Sets `headers` in the answer to the `nth` matching request (and `times - 1` more),
        /// which the upstream got and answered.
        public static func rewrite(
            headers: [String: String], method: String? = nil, path: String? = nil, nth: Int = 1, times: Int = 1
        ) -> Rule {
            Rule(method: method, path: path, nth: nth, times: times, action: .rewrite(headers: headers))
        }

        /// Flips a byte of the answer's body to the `nth` matching request (and `times - 1`
        /// more; 0: all from the `nth` on), at `offset` in the body (nil: the middle one).
        public static func flipAnswer(
            method: String? = nil, path: String? = nil, nth: Int = 1, times: Int = 1, offset: Int? = nil
        ) -> Rule {
            Rule(method: method, path: path, nth: nth, times: times, action: .flipAnswer(offset: offset))
        }

        /// From the `nth` matching request on, answers every request `status` (503: the
        /// store is unavailable) for `seconds`.
        public static func outage(
            _ seconds: Double, status: Int = 503, method: String? = nil, path: String? = nil, nth: Int = 1
        ) -> Rule {
            Rule(method: method, path: path, nth: nth, times: 0, action: .outage(seconds: seconds, status: status))
        }

        /// Answers the `nth` matching request (and `times - 1` more) with `status`, `headers`
        /// and `body`, without the upstream.
        public static func answer(
            _ status: Int, headers: [String: String] = [:], body: String, method: String? = nil, path: String? = nil,
            nth: Int = 1, times: Int = 1
        ) -> Rule {
            Rule(
                method: method, path: path, nth: nth, times: times,
                action: .answer(status: status, headers: headers, body: body))
        }
    }

    /// A request the proxy saw.
    public struct Seen: Sendable, Equatable {
        /// The request's method.
        public let method: String
        /// Its target: path and query, as sent.
        public let target: String
        /// Its headers, names lower-cased.
        public let headers: [String: String]
        /// The body bytes received (for a dropped request: before the drop).
        public internal(set) var bodyBytes: Int
        /// `forward`, or the action of the rule that acted: `corrupt`, `status`, `drop`, `delay`,
        /// `cut`, `rewrite`, `answer`, `outage`.
        public let action: String
        /// The index of the rule that acted, nil when none did.
        public let rule: Int?
        /// The status relayed from the upstream or sent by the proxy; nil when dropped (or failed).
        public internal(set) var status: Int?
        /// The bytes of the upstream's answer (head and body) relayed to the client, up to the
        /// end of the answer or the client's going away (the last piece written counted whole),
        /// 0 for an answer the proxy made itself.
        public internal(set) var answerBytes: Int = 0
        /// When the request's head had arrived (and the proxy chose its action).
        public let arrived = ContinuousClock.now
    }

    /// Starts a proxy to `upstream` (e.g. a store's ``SwiftStoreTestServer/endpoint``) on a free port.
    public static func start(upstream: String) async throws -> FaultProxy {
        guard let url = URL(string: upstream), let host = url.host else {
            throw SwiftStoreTestServer.Failure(description: "fault proxy: no host in the upstream \(upstream)")
        }
        return try await SwiftStoreTestServer.offThePool { try FaultProxy(host: host, port: url.port ?? 80) }
    }

    private init(host: String, port: Int) throws {
        let state = FaultProxyState()
        let exchange = FaultProxyExchange(upstreamHost: host, upstreamPort: port, state: state)
        peer = try SocketPeer { connection in await exchange.serve(connection) }
        endpoint = peer.baseURL
        self.state = state
    }

    /// Replaces the rules (and restarts their counts). Throws, naming the reason, when a
    /// rule's `path` is not a regular expression.
    public func setRules(_ rules: [Rule]) async throws {
        try state.setRules(rules)
    }

    /// Every request seen since the start (or ``clearLog()``), in arrival order. A request is
    /// logged once its exchange is over (its answer relayed, or the connection dropped).
    public func log() async throws -> [Seen] {
        state.entries()
    }

    /// The log as soon as `condition` holds for it, or as it is after `limit` (then
    /// `condition` does not hold): waits on the proxy's logging, not on a clock.
    public func log(
        waitingUpTo limit: Duration = .seconds(30), until condition: @escaping @Sendable ([Seen]) -> Bool
    ) async -> [Seen] {
        await state.entries(waitingUpTo: limit) { log, _ in condition(log) }
    }

    /// The log once every exchange whose request has arrived is over (or as it is after
    /// `limit`): what a client that has its answers did, with no exchange still closing.
    public func settledLog(waitingUpTo limit: Duration = .seconds(10)) async -> [Seen] {
        await state.entries(waitingUpTo: limit) { _, open in open == 0 }
    }

    /// Forgets the requests seen so far.
    public func clearLog() async throws {
        state.clear()
    }

    /// Stops the proxy: closes its port and every connection.
    public func stop() {
        peer.stop()
    }

    deinit { stop() }
}
