import Foundation
import Glibc

/// An nginx on 127.0.0.1 that serves HTTPS (a certificate for 127.0.0.1 and localhost,
/// signed by a CA made for it, `TestCertificates`) and passes every request on, unchanged,
/// to a plain-HTTP server on loopback (a store's S3 endpoint, say): the path and query as
/// received, the `Host` header as the client sent it (so a SigV4 signature made for
/// `127.0.0.1:TLSPORT` still verifies), bodies streamed both ways.
public final class TLSReverseProxy: @unchecked Sendable {
    // Unchecked Sendable: every stored property is set in `init` and only read after.
    /// The HTTPS port (127.0.0.1).
    public let port: Int
    /// nginx's folder (configuration, logs, certificates), removed by `stop()`.
    public let folder: URL
    /// The CA a client must trust, and the server's certificate and key.
    public let certificates: TestCertificates
    private let pid: pid_t
    private let once = StopOnce()

    /// `https://127.0.0.1:PORT`.
    public var endpoint: String { "https://127.0.0.1:\(port)" }

    /// Starts nginx in front of `upstreamPort` (on 127.0.0.1).
    public init(upstreamPort: Int) throws {
        let nginx = try NginxTestServer.binary()
        var lastError = ""
        for _ in 0..<5 {
            let port = try NginxTestServer.freePort()
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "nginx-tls-proxy-\(UUID().uuidString)")
            for sub in ["tmp", "logs", "tls"] {
                try FileManager.default.createDirectory(
                    at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
            }
            let certificates = try TestCertificates(folder: folder.appendingPathComponent("tls"))
            let conf = folder.appendingPathComponent("nginx.conf")
            try Self.config(folder: folder.path, port: port, upstreamPort: upstreamPort, certificates: certificates)
                .write(to: conf, atomically: true, encoding: .utf8)
            let pid = try NginxTestServer.spawn(
                nginx, ["nginx", "-e", folder.path + "/logs/error.log", "-p", folder.path, "-c", conf.path])
            if NginxTestServer.waitForPort(port, pid: pid) {
                self.port = port
                self.folder = folder
                self.certificates = certificates
                self.pid = pid
                return
            }
            NginxTestServer.killAndReap(pid)
            lastError =
                (try? String(contentsOf: folder.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: folder)
        }
        throw NginxTestServer.Failure(description: "nginx (TLS reverse proxy) did not start: \(lastError)")
    }

    /// The lines of nginx's access log (`METHOD URI STATUS`), one per request it passed on.
    public func accessLog() -> [String] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("logs/access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Stops nginx and removes its folder.
    public func stop() {
        guard once.first() else { return }
        NginxTestServer.killAndReap(pid)
        try? FileManager.default.removeItem(at: folder)
    }

    deinit { stop() }

    static func config(folder: String, port: Int, upstreamPort: Int, certificates: TestCertificates) -> String {
        """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(folder)/nginx.pid;
        error_log \(folder)/logs/error.log warn;
        events { worker_connections 64; }
        http {
            log_format line '$request_method $request_uri $status';
            access_log \(folder)/logs/access.log line;
            client_body_temp_path \(folder)/tmp/body;
            proxy_temp_path \(folder)/tmp/proxy;
            fastcgi_temp_path \(folder)/tmp/fastcgi;
            uwsgi_temp_path \(folder)/tmp/uwsgi;
            scgi_temp_path \(folder)/tmp/scgi;
            server {
                listen 127.0.0.1:\(port) ssl;
                ssl_certificate \(certificates.serverCertificate.path);
                ssl_certificate_key \(certificates.serverKey.path);
                client_max_body_size 0;
                location / {
                    proxy_pass http://127.0.0.1:\(upstreamPort);
                    proxy_http_version 1.1;
                    proxy_set_header Host $http_host;
                    proxy_set_header Connection "";
                    proxy_request_buffering off;
                    proxy_buffering off;
                    proxy_read_timeout 120s;
                }
            }
        }
        """
    }
}
