import BlobStream
import Foundation
import NIOCore
import NIOPosix

/// A TCP server in this process, on 127.0.0.1 on a free port, that serves each connection
/// with an async function over its raw bytes (a ``PeerConnection``): for peers that break
/// HTTP on purpose (a body cut short, an answer before the body's end, a tunnel), which an
/// HTTP server library would not let a test write. It is listening when `init` returns (no
/// port file, nothing to poll), records what a test asks it to (``recorded(_:)``), and
/// ``stop()`` closes the listener and every connection.
///
/// ```swift
/// let peer = try SocketPeer { connection in
///     guard let head = try await connection.readHead() else { return }
///     connection.record(head.split(separator: "\r\n").first.map(String.init) ?? "", in: "lines")
///     try await connection.write("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
/// }
/// defer { peer.stop() }
/// ```
public final class SocketPeer: Sendable {
    /// The port it listens on (127.0.0.1).
    public let port: Int
    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    private let listener: any Channel
    private let registry: PeerRegistry

    /// Starts listening on 127.0.0.1 on a free port; each accepted connection is served by
    /// `serve` in a task of its own and closed when `serve` returns or throws. With
    /// `receiveBufferSize`, accepted sockets get that kernel receive buffer (`SO_RCVBUF`),
    /// so that the kernel takes in little of a body the peer does not read.
    public init(
        receiveBufferSize: Int? = nil, serve: @escaping @Sendable (PeerConnection) async throws -> Void
    ) throws {
        let registry = PeerRegistry()
        var bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 16)
        if let receiveBufferSize {
            // Set on the listener: an accepted socket inherits it before its window is offered.
            bootstrap = bootstrap.serverChannelOption(
                .socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBufferSize))
        }
        listener = try bootstrap.childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(InboundCopier())
                // A low watermark: the peer reads from the socket about as fast as it consumes,
                // as a plain socket server would, so a peer that stops reading stalls the sender.
                let wrapped = try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                    wrappingChannelSynchronously: channel,
                    configuration: .init(backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2)))
                guard registry.opened(channel) else { return channel.close(promise: nil) }
                Task(executorPreference: PeerExecutor.shared) {
                    try? await wrapped.executeThenClose { inbound, outbound in
                        let connection = PeerConnection(channel: channel, inbound, outbound, registry: registry)
                        try await serve(connection)
                        await connection.flush()
                    }
                }
            }
        }
        .bind(host: "127.0.0.1", port: 0).wait()
        port = listener.localAddress?.port ?? 0
        self.registry = registry
    }

    /// The lines recorded in `name` so far (``PeerConnection/record(_:in:)``), in order.
    public func recorded(_ name: String) -> [String] { registry.recorded(name) }

    /// Stops listening and closes every connection (waits for the listener to close).
    public func stop() {
        for connection in registry.stop() { connection.close(promise: nil) }
        try? listener.close().wait()
    }

    deinit { stop() }
}

/// The connections a ``SocketPeer`` has open, and what it recorded.
final class PeerRegistry: Sendable {
    private struct State {
        var connections: [ObjectIdentifier: any Channel] = [:]
        var records: [String: [String]] = [:]
        var stopped = false
    }
    private let state = Locked(State())

    /// Registers an accepted connection; false once the peer is stopped.
    func opened(_ channel: any Channel) -> Bool {
        let open = state.withLock { s in
            if !s.stopped { s.connections[ObjectIdentifier(channel)] = channel }
            return !s.stopped
        }
        if open {
            channel.closeFuture.whenComplete { [self] _ in
                _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
            }
        }
        return open
    }

    /// Appends `line` to `name`; returns how many lines `name` held before.
    func record(_ line: String, in name: String) -> Int {
        state.withLock { s in
            defer { s.records[name, default: []].append(line) }
            return s.records[name]?.count ?? 0
        }
    }

    func recorded(_ name: String) -> [String] { state.withLock { $0.records[name] ?? [] } }

    /// Marks the peer stopped; returns the connections to close.
    func stop() -> [any Channel] {
        state.withLock { s in
            s.stopped = true
            defer { s.connections = [:] }
            return Array(s.connections.values)
        }
    }
}
