import Foundation
import Glibc

/// A listening socket on 127.0.0.1 that never accepts: the kernel completes connections
/// and buffers what they send until its buffers are full, then the sender stalls. Nothing
/// is ever read or answered. With `fillBacklog`, the accept queue is filled first, so a
/// further connection is never completed (its SYNs are dropped): connecting hangs.
public final class StallingPeer: @unchecked Sendable {
    // Unchecked Sendable: the descriptors are set in `init` and only closed by `stop()`.
    /// The port it listens on (127.0.0.1).
    public let port: Int
    private let fd: Int32
    private var fillers: [Int32] = []
    private let once = StopOnce()

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts listening on a free port; with `fillBacklog`, fills the accept queue first.
    public init(fillBacklog: Bool = false) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        guard fd >= 0 else { throw NginxTestServer.Failure(description: "socket: errno \(errno)") }
        var addr = NginxTestServer.loopback(port: 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && listen(fd, fillBacklog ? 0 : 16) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard ok else {
            Glibc.close(fd)
            throw NginxTestServer.Failure(description: "bind/listen: errno \(errno)")
        }
        port = Int(UInt16(bigEndian: addr.sin_port))
        var fillers: [Int32] = []
        defer { self.fillers = fillers }
        if fillBacklog {
            // A backlog of 0 holds one completed connection; two make sure it is full.
            for _ in 0..<2 {
                let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                var target = addr
                _ = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                fillers.append(client)
            }
            // Until a filler's connection is complete (writable): the queue is full from then on.
            var polled = fillers.map { pollfd(fd: $0, events: Int16(POLLOUT), revents: 0) }
            guard poll(&polled, nfds_t(polled.count), 10_000) > 0 else {
                // `deinit` closes the socket and the fillers (the `defer` above hands them over).
                throw NginxTestServer.Failure(description: "the backlog's connections did not complete in 10 s")
            }
        }
    }

    /// Closes the socket (and the connections filling the backlog).
    public func stop() {
        guard once.first() else { return }
        for filler in fillers { Glibc.close(filler) }
        Glibc.close(fd)
    }

    deinit { stop() }
}
