import Foundation
import Glibc

/// A small Python server on 127.0.0.1 (a script given as text), started on a free port it
/// reports through a file, killed by `stop()`.
public final class PythonPeer: @unchecked Sendable {
    // Unchecked Sendable: set in `init`, the process is only killed by `stop()`.
    /// The port it listens on (127.0.0.1).
    public let port: Int
    /// A folder of the peer's own (its script, and what it records), removed by `stop()`.
    public let folder: URL
    private let pid: pid_t
    private let once = StopOnce()

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts `python3 SCRIPT PORTFILE FOLDER ARGS...`; the script writes its port to
    /// PORTFILE (then renames it into place) once it listens.
    public init(script: String, arguments: [String] = []) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("peer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("peer.py")
        let portFile = folder.appendingPathComponent("port")
        try script.write(to: file, atomically: true, encoding: .utf8)
        let pid = try NginxTestServer.spawn(
            "/usr/bin/env", ["env", "python3", file.path, portFile.path, folder.path] + arguments)
        let deadline = Date(timeIntervalSinceNow: 10)
        var port: Int?
        while port == nil, Date() < deadline {
            port = (try? String(contentsOf: portFile, encoding: .utf8)).flatMap { Int($0) }
            if port == nil { usleep(20_000) }
        }
        guard let port else {
            NginxTestServer.killAndReap(pid)
            try? FileManager.default.removeItem(at: folder)
            throw NginxTestServer.Failure(description: "the python peer did not start (python3 needed)")
        }
        self.port = port
        self.folder = folder
        self.pid = pid
    }

    /// Stops the peer and removes its folder.
    public func stop() {
        guard once.first() else { return }
        NginxTestServer.killAndReap(pid)
        try? FileManager.default.removeItem(at: folder)
    }

    deinit { stop() }

    /// The lines of the file `name` in the peer's folder (what it recorded).
    public func recorded(_ name: String) -> [String] {
        let text = (try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// The head of every peer: listen on 127.0.0.1, report the port.
    static let prologue = #"""
        import os, socket, sys, threading
        def listen():
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", 0))
            server.listen(16)
            with open(sys.argv[1] + ".tmp", "w") as f:
                f.write(str(server.getsockname()[1]))
            os.rename(sys.argv[1] + ".tmp", sys.argv[1])
            return server
        def read_head(conn):
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return None
                data += chunk
            return data.partition(b"\r\n\r\n")[0].decode("latin-1")
        """#

    /// An HTTP proxy that only tunnels (`CONNECT host:port`), as HTTPS through a proxy
    /// needs; each CONNECT line is recorded in the file `connects`.
    public static func connectProxy() throws -> PythonPeer {
        try PythonPeer(
            script: prologue + "\n" + #"""
                def pipe(a, b):
                    try:
                        while True:
                            data = a.recv(65536)
                            if not data:
                                break
                            b.sendall(data)
                    except OSError:
                        pass
                    for s in (a, b):
                        try:
                            s.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                def serve(conn):
                    head = read_head(conn)
                    if head is None:
                        conn.close(); return
                    line = head.split("\r\n")[0]
                    with open(os.path.join(sys.argv[2], "connects"), "a") as f:
                        f.write(line + "\n")
                    method, target = line.split(" ")[0:2]
                    if method != "CONNECT":
                        conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        conn.close(); return
                    host, port = target.rsplit(":", 1)
                    upstream = socket.create_connection((host, int(port)), timeout=10)
                    upstream.settimeout(None)
                    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    threading.Thread(target=pipe, args=(upstream, conn), daemon=True).start()
                    pipe(conn, upstream)
                server = listen()
                while True:
                    conn, _ = server.accept()
                    threading.Thread(target=serve, args=(conn,), daemon=True).start()
                """#)
    }

    /// A server of an object of `length` deterministic bytes (byte i is i % 251) that
    /// answers each ranged GET with the right head (206, Content-Range, Content-Length) but
    /// sends only the first half of the body, then closes the connection.
    public static func droppingServer(length: Int) throws -> PythonPeer {
        try PythonPeer(
            script: prologue + "\n" + #"""
                length = int(sys.argv[3])
                def serve(conn):
                    head = read_head(conn)
                    if head is None:
                        conn.close(); return
                    first, last = 0, length - 1
                    for line in head.split("\r\n")[1:]:
                        name, _, value = line.partition(":")
                        if name.strip().lower() == "range":
                            a, _, b = value.strip()[6:].partition("-")
                            first, last = int(a), min(int(b), length - 1) if b else length - 1
                    body = bytes(i % 251 for i in range(first, last + 1))
                    conn.sendall(("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes %d-%d/%d\r\n"
                                  "Content-Length: %d\r\nETag: \"fixed\"\r\n\r\n" % (first, last, length, len(body))).encode())
                    conn.sendall(body[: len(body) // 2])
                    conn.shutdown(socket.SHUT_RDWR)
                    conn.close()
                server = listen()
                while True:
                    conn, _ = server.accept()
                    threading.Thread(target=serve, args=(conn,), daemon=True).start()
                """#, arguments: [String(length)])
    }
}
