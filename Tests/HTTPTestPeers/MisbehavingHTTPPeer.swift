import BlobStream
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP server in this process, on 127.0.0.1 on a free port, that serves byte ranges of
/// the objects it is given (with a strong ETag, `Range`, `If-Match`) and misbehaves as told:
/// it cuts a body mid-way, answers error statuses, redirects, or goes down for a while. It
/// logs every request, and a test waits on that log (bounded), never on a clock.
///
/// ```swift
/// let peer = try MisbehavingHTTPPeer()
/// defer { peer.stop() }
/// peer.serve(bytes, at: "/object.bin")
/// peer.setFaults([.cut(afterBytes: 1000)], from: 2)   // the second GET is cut
/// // read peer.url("/object.bin"); redirects: peer.url("/hop/3/object.bin") (3 hops)
/// ```
///
/// Paths `/hop/N/REST` answer a redirect to `/hop/N-1/REST`, `/hop/1/REST` to `/REST` (in turn 301,
/// 302, 303, 307, 308), and `/hop/0/REST` is `/REST`. `/elsewhere/PORT/REST` answers a 302 to
/// `http://127.0.0.1:PORT/REST`, another origin (a second peer); `/elsewhere-presigned/PORT/REST`
/// the same with a presigned query (`X-Amz-Signature`), which the second peer ignores. Faults apply to GETs of served objects (redirects
/// excluded), counted from 1 since `setFaults`. A PUT stores its body at its path (answered
/// 201 Created), served from then on: an upload's copy, to compare.
public final class MisbehavingHTTPPeer: Sendable {
    /// What to do to one GET.
    public enum Fault: Sendable, Equatable {
        /// Send the head (its `Content-Length` the whole range) and `afterBytes` of the body,
        /// then close the connection.
        case cut(afterBytes: Int)
        /// Answer this status (e.g. 503) with a short body.
        case status(Int)
        /// Close this connection without an answer and stop listening; listen again on the
        /// same port after `seconds` (meanwhile connections are refused).
        case down(seconds: Double)
        /// Send the head at once, then the body at `bytesPerSecond` (a tenth of it every
        /// 100 ms, at least one byte) until it is whole or the client closes the connection:
        /// a server that never falls silent long enough for an idle timeout.
        case trickle(bytesPerSecond: Int)
        /// Answer nothing and keep the connection open (a node that hangs: SIGSTOP).
        case hang
    }

    /// A request the peer saw.
    public struct Seen: Sendable, Equatable {
        /// Its method and path.
        public let method: String, path: String
        /// Its `Range` and `If-Match` headers.
        public let range: String?, ifMatch: String?
        /// The credentials it carried: its `Authorization` and `X-Amz-Security-Token` headers.
        public let authorization: String?, securityToken: String?
        /// What the peer did: `served`, `cut`, `status`, `down`, `redirect`, `notFound`, `refused` (If-Match),
        /// `stored` (a PUT), `trickled` (a body sent slowly), `hung` (no answer).
        public let action: String
    }

    /// The port the peer listens on.
    public let port: Int
    private let group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    private let state = Locked(PeerState())
    private let logged = NSCondition()
    nonisolated(unsafe) private var seen: [Seen] = [] // guarded by `logged`

    struct PeerState {
        var objects: [String: (bytes: [UInt8], etag: String?)] = [:]
        var faults: [Fault] = []
        var firstFaulted = 1
        var gets = 0
        var listener: (any Channel)?
        var connections: [ObjectIdentifier: any Channel] = [:]
        /// Every connection accepted so far.
        var opened = 0
        var stopped = false
        /// Between a `.down` fault and the listener's return: connections are closed unanswered.
        var isDown = false
    }

    /// Starts listening on 127.0.0.1 on a free port.
    public init() throws {
        let listener = try Self.bind(port: 0, to: nil).wait()
        port = listener.localAddress?.port ?? 0
        Self.attach(listener, to: self)
    }

    /// The URL of `path` (which starts with `/`) on this peer.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Serves `bytes` at `path`, with a strong ETag of its own.
    public func serve(_ bytes: Data, at path: String) {
        state.withLock { $0.objects[path] = ([UInt8](bytes), "\"peer-\(UUID().uuidString.prefix(8))-\(bytes.count)\"") }
    }

    /// Serves `bytes` at `path` with the strong ETag `entityTag` (quoted: `"\"v1\""`): two
    /// peers can then serve objects that look like one version of one object.
    public func serve(_ bytes: Data, at path: String, entityTag: String) {
        state.withLock { $0.objects[path] = ([UInt8](bytes), entityTag) }
    }

    /// Serves `bytes` at `path` without an ETag (nor Last-Modified): a file no later request
    /// can be pinned to.
    public func serveWithoutETag(_ bytes: Data, at path: String) {
        state.withLock { $0.objects[path] = ([UInt8](bytes), nil) }
    }

    /// The bytes stored or served at `path`, if any (an upload's copy).
    public func bytes(at path: String) -> Data? {
        state.withLock { $0.objects[path].map { Data($0.bytes) } }
    }

    /// Makes GET number `first` (counted from 1 from now) and those after it meet `faults`
    /// in turn; the GETs after them are served.
    public func setFaults(_ faults: [Fault], from first: Int = 1) {
        state.withLock {
            $0.faults = faults
            $0.firstFaulted = first
            $0.gets = 0
        }
    }

    /// The requests seen so far, in order.
    public var requests: [Seen] { logged.withLock { seen } }

    /// How many connections the peer has accepted so far.
    public var connectionsOpened: Int { state.withLock { $0.opened } }

    /// Waits until `condition` holds for the requests seen, at most `timeout` seconds; true
    /// when it holds.
    public func wait(timeout: Double = 10, until condition: ([Seen]) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return logged.withLock {
            while !condition(seen) { if !logged.wait(until: deadline) { return condition(seen) } }
            return true
        }
    }

    /// Stops listening and closes every connection (waits for the listener to close).
    public func stop() {
        let (listener, connections) = state.withLock { s in
            s.stopped = true
            defer { (s.listener, s.connections) = (nil, [:]) }
            return (s.listener, Array(s.connections.values))
        }
        for connection in connections { connection.close(promise: nil) }
        try? listener?.close().wait()
    }

    deinit { stop() }

    // MARK: - Serving

    private static func bind(port: Int, to peer: MisbehavingHTTPPeer?) -> EventLoopFuture<any Channel> {
        ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(PeerHandler(peer: peer ?? Self.attached(channel)))
                }
            }
            .bind(host: "127.0.0.1", port: port)
    }

    /// Remembers the peer of a listener (child channels find it through their parent).
    private static let peers = Locked<[ObjectIdentifier: MisbehavingHTTPPeer]>([:])

    private static func attach(_ listener: any Channel, to peer: MisbehavingHTTPPeer) {
        peers.withLock { $0[ObjectIdentifier(listener)] = peer }
        peer.state.withLock { $0.listener = listener }
        listener.closeFuture.whenComplete { _ in
            _ = peers.withLock { $0.removeValue(forKey: ObjectIdentifier(listener)) }
        }
    }

    private static func attached(_ channel: any Channel) -> MisbehavingHTTPPeer? {
        guard let parent = channel.parent else { return nil }
        return peers.withLock { $0[ObjectIdentifier(parent)] }
    }

    func opened(_ channel: any Channel) {
        // A connection accepted just before the listener closed: refused as well.
        if state.withLock({ $0.isDown }) { return channel.close(promise: nil) }
        state.withLock {
            $0.connections[ObjectIdentifier(channel)] = channel
            $0.opened += 1
        }
        channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
        }
    }

    func store(_ bytes: [UInt8], at path: String) {
        state.withLock { $0.objects[path] = (bytes, "\"peer-\(UUID().uuidString.prefix(8))-\(bytes.count)\"") }
    }

    func log(_ head: HTTPRequestHead, _ action: String) {
        logged.withLock {
            seen.append(
                Seen(
                    method: head.method.rawValue, path: head.uri, range: head.headers.first(name: "Range"),
                    ifMatch: head.headers.first(name: "If-Match"),
                    authorization: head.headers.first(name: "Authorization"),
                    securityToken: head.headers.first(name: "X-Amz-Security-Token"), action: action))
            logged.broadcast()
        }
    }

    /// The location on another origin that `/elsewhere/PORT/REST` (or
    /// `/elsewhere-presigned/PORT/REST`) redirects to; nil for any other path. A PUT there is
    /// answered 307 (send the body again) with it.
    static func elsewhere(_ uri: String) -> String? {
        let parts = uri.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count == 3, parts[0] == "elsewhere" || parts[0] == "elsewhere-presigned", let port = Int(parts[1])
        else { return nil }
        let query = parts[0] == "elsewhere" ? "" : "?X-Amz-Expires=60&X-Amz-Signature=0123456789abcdef"
        return "http://127.0.0.1:\(port)/\(parts[2].prefix { $0 != "?" })\(query)"
    }

    /// What to answer to `head`.
    func answer(_ head: HTTPRequestHead) -> PeerAnswer {
        let parts = head.uri.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: true)
        if parts.count == 3, parts[0] == "hop", let hops = Int(parts[1]) {
            let rest = "/" + parts[2]
            guard hops > 0 else {
                return answer(
                    HTTPRequestHead(version: head.version, method: head.method, uri: rest, headers: head.headers))
            }
            let status: HTTPResponseStatus = [
                .movedPermanently, .found, .seeOther, .temporaryRedirect, .permanentRedirect,
            ][hops % 5]
            return .redirect(status, hops == 1 ? rest : "/hop/\(hops - 1)\(rest)")
        }
        if let location = Self.elsewhere(head.uri) { return .redirect(.found, location) }
        return state.withLock { s in
            if s.isDown { return .down(0) }
            // A query (a presigned URL's) names the same object.
            guard let object = s.objects[head.uri] ?? s.objects[String(head.uri.prefix { $0 != "?" })] else {
                return .status(404)
            }
            s.gets += 1
            let index = s.gets - s.firstFaulted
            if index >= 0, index < s.faults.count {
                switch s.faults[index] {
                case .status(let code): return .status(code)
                case .down(let seconds): return .down(seconds)
                case .cut(let afterBytes): return Self.ranged(object, head, cutAfter: afterBytes)
                case .hang: return .hang
                case .trickle(let rate):
                    guard
                        case .body(let status, let etag, let range, let bytes, _) = Self.ranged(
                            object, head, cutAfter: nil)
                    else { return Self.ranged(object, head, cutAfter: nil) }
                    return .trickled(status, etag, range, bytes, bytesPerSecond: rate)
                }
            }
            return Self.ranged(object, head, cutAfter: nil)
        }
    }

    private static func ranged(_ object: (bytes: [UInt8], etag: String?), _ head: HTTPRequestHead, cutAfter: Int?)
        -> PeerAnswer
    {
        if let ifMatch = head.headers.first(name: "If-Match"), ifMatch != object.etag { return .status(412) }
        let length = object.bytes.count
        guard let range = head.headers.first(name: "Range"), range.hasPrefix("bytes=") else {
            return .body(.ok, object.etag, nil, object.bytes[...], cutAfter: cutAfter)
        }
        let bounds = range.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        // `bytes=-N`: the last N bytes.
        let suffix = bounds[0].isEmpty && bounds.count > 1 ? Int(bounds[1]) : nil
        guard let first = suffix.map({ max(0, length - $0) }) ?? Int(bounds[0]), first < length else {
            return .unsatisfiable(length)
        }
        let last =
            suffix != nil ? length - 1 : min(bounds.count > 1 ? Int(bounds[1]) ?? length - 1 : length - 1, length - 1)
        return .body(
            .partialContent, object.etag, "bytes \(first)-\(last)/\(length)", object.bytes[first...last],
            cutAfter: cutAfter)
    }

    /// Goes down: every connection closed, the listener too; listens again after `seconds`.
    func goDown(for seconds: Double) {
        let (listener, connections, wasDown) = state.withLock { s in
            defer { (s.listener, s.connections, s.isDown) = (nil, [:], true) }
            return (s.listener, Array(s.connections.values), s.isDown)
        }
        for connection in connections { connection.close(promise: nil) }
        listener?.close(promise: nil)
        if wasDown { return }
        group.next().scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) { [weak self] in
            guard let self, !self.state.withLock({ $0.stopped }) else { return }
            Self.bind(port: self.port, to: self).whenSuccess {
                self.state.withLock { $0.isDown = false }
                Self.attach($0, to: self)
            }
        }
    }
}

/// What the peer answers to one request.
enum PeerAnswer {
    case body(HTTPResponseStatus, String?, String?, ArraySlice<UInt8>, cutAfter: Int?)
    case status(Int)
    case unsatisfiable(Int)
    case redirect(HTTPResponseStatus, String)
    case down(Double)
    case hang
    case trickled(HTTPResponseStatus, String?, String?, ArraySlice<UInt8>, bytesPerSecond: Int)
}
