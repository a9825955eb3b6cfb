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
            usleep(100_000)
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

/// An HTTP peer on 127.0.0.1 (a small Python server) that answers `201 Created` after it
/// has read `answerAfter` bytes of the request body, not the whole body. Then it either
/// goes on reading and discarding the rest after a 3 s pause (`drain`, so the client sees no
/// error from the connection) or closes the connection at once. It records nothing.
public final class EarlyAnswerPeer: @unchecked Sendable {
    // Unchecked Sendable: set in `init`, the process is only killed by `stop()`.
    /// The port it listens on (127.0.0.1).
    public let port: Int
    private let pid: pid_t
    private let once = StopOnce()

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    static let script = #"""
        import socket, sys, threading
        limit, drain = int(sys.argv[1]), sys.argv[2] == "drain"
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # A small receive buffer, so that the kernel does not take in a large part of the body
        # for the peer before it answers (the client must still be writing when the answer comes).
        server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        with open(sys.argv[3] + ".tmp", "w") as f:
            f.write(str(server.getsockname()[1]))
        import os
        os.rename(sys.argv[3] + ".tmp", sys.argv[3])
        def serve(conn):
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    conn.close(); return
                data += chunk
            got = len(data.partition(b"\r\n\r\n")[2])
            while got < limit:
                chunk = conn.recv(65536)
                if not chunk: break
                got += len(chunk)
            conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            if drain:
                # Read nothing for a while first: the client's writes then stall on full
                # buffers with most of the body unwritten, so its answer is seen while the
                # body is still being written even on a slow machine (under ThreadSanitizer a
                # peer that drained at once let a slowed client finish writing first).
                import time
                time.sleep(3)
                conn.settimeout(10)
                try:
                    while conn.recv(1 << 20): pass
                except OSError:
                    pass
            conn.close()
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
        """#

    /// Starts the peer; `answerAfter` body bytes (at least) are read before the answer.
    public init(answerAfter: Int, drain: Bool = true) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("early-answer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = folder.appendingPathComponent("peer.py")
        let portFile = folder.appendingPathComponent("port")
        try Self.script.write(to: script, atomically: true, encoding: .utf8)
        // posix_spawn and waitpid, as for nginx (Foundation's Process can hang in deinit).
        let pid = try NginxTestServer.spawn(
            "/usr/bin/env",
            ["env", "python3", script.path, String(answerAfter), drain ? "drain" : "close", portFile.path])
        let deadline = Date(timeIntervalSinceNow: 10)
        var port: Int?
        while port == nil, Date() < deadline {
            port = (try? String(contentsOf: portFile, encoding: .utf8)).flatMap { Int($0) }
            if port == nil { usleep(20_000) }
        }
        guard let port else {
            NginxTestServer.killAndReap(pid)
            throw NginxTestServer.Failure(description: "the early-answer peer did not start (python3 needed)")
        }
        self.port = port
        self.pid = pid
    }

    /// Stops the peer.
    public func stop() {
        guard once.first() else { return }
        NginxTestServer.killAndReap(pid)
    }

    deinit { stop() }
}
