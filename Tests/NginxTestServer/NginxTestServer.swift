import Foundation
import Glibc

/// An nginx serving WebDAV PUT on 127.0.0.1 for upload tests: started in a temporary folder
/// on a free port, stopped (and the folder removed) by `stop()`.
///
/// - `PUT /files/<path>` stores the body under `root/files/<path>` (chunked bodies too).
/// - `/deny/…` answers 403, `/slow-close/…` closes the connection without an answer.
public final class NginxTestServer: @unchecked Sendable {
    // Unchecked Sendable: every stored property is set in `init` and only read after.
    public let port: Int
    public let folder: URL
    private let process: Process

    /// The stored files' root.
    public var root: URL { folder.appendingPathComponent("www") }

    /// The base URL, e.g. `http://127.0.0.1:41234`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The nginx binary: `$NGINX`, or the first of the usual places.
    static func binary() throws -> String {
        if let path = ProcessInfo.processInfo.environment["NGINX"] { return path }
        for path in ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        throw Failure(description: "nginx is not installed (make test installs it: scripts/install-deps nginx)")
    }

    /// Starts nginx; retries with another port if the one chosen was taken meanwhile.
    public init() throws {
        let nginx = try Self.binary()
        var lastError = ""
        for _ in 0..<5 {
            let port = try Self.freePort()
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
            for sub in ["www/files", "tmp", "logs"] {
                try FileManager.default.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
            }
            let conf = folder.appendingPathComponent("nginx.conf")
            try Self.config(folder: folder.path, port: port).write(to: conf, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: nginx)
            process.arguments = ["-e", folder.path + "/logs/error.log", "-p", folder.path, "-c", conf.path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if Self.waitForPort(port, process: process) {
                self.port = port
                self.folder = folder
                self.process = process
                return
            }
            process.terminate()
            process.waitUntilExit()
            lastError = (try? String(contentsOf: folder.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: folder)
        }
        throw Failure(description: "nginx did not start: \(lastError)")
    }

    /// Stops nginx and removes its folder.
    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }

    deinit { stop() }

    /// The bytes stored at `files/<path>`, or nil when nothing was stored.
    public func stored(_ path: String) -> Data? {
        FileManager.default.contents(atPath: root.appendingPathComponent("files/" + path).path)
    }

    static func config(folder: String, port: Int) -> String {
        """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(folder)/nginx.pid;
        error_log \(folder)/logs/error.log warn;
        events { worker_connections 64; }
        http {
            access_log off;
            client_body_temp_path \(folder)/tmp/body;
            proxy_temp_path \(folder)/tmp/proxy;
            fastcgi_temp_path \(folder)/tmp/fastcgi;
            uwsgi_temp_path \(folder)/tmp/uwsgi;
            scgi_temp_path \(folder)/tmp/scgi;
            client_max_body_size 0;
            server {
                listen 127.0.0.1:\(port);
                root \(folder)/www;
                location /files/ {
                    dav_methods PUT DELETE;
                    create_full_put_path on;
                    dav_access user:rw group:r all:r;
                }
                location /deny/ { return 403; }
                location /slow-close/ { return 444; }
            }
        }
        """
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw Failure(description: "bind: errno \(errno)") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    static func waitForPort(_ port: Int, process: Process) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        while Date() < deadline {
            if !process.isRunning { return false }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            let ok = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if ok { return true }
            usleep(20_000)
        }
        return false
    }
}
