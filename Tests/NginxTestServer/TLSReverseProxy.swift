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
    public var port: Int { process.ports[0] }
    /// nginx's folder (configuration, logs, certificates), removed by `stop()`.
    public var folder: URL { process.folder }
    /// The CA a client must trust, and the server's certificate and key.
    public let certificates: TestCertificates
    private let process: NginxProcess
    private let once = StopOnce()

    /// `https://127.0.0.1:PORT`.
    public var endpoint: String { "https://127.0.0.1:\(port)" }

    /// Starts nginx in front of `upstreamPort` (on 127.0.0.1).
    public init(upstreamPort: Int) throws {
        var certificates: TestCertificates?
        process = try NginxProcess.start(
            name: "nginx (TLS reverse proxy)", folderPrefix: "nginx-tls-proxy", subfolders: ["tls"]
        ) { folder, ports in
            let made = try TestCertificates(folder: folder.appendingPathComponent("tls"))
            certificates = made
            return Self.config(folder: folder.path, port: ports[0], upstreamPort: upstreamPort, certificates: made)
        }
        self.certificates = certificates!
    }

    /// The lines of nginx's access log (`METHOD URI STATUS`), one per request it passed on.
    public func accessLog() -> [String] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("logs/access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Stops nginx and removes its folder.
    public func stop() {
        guard once.first() else { return }
        process.stop()
    }

    deinit { stop() }

    static func config(folder: String, port: Int, upstreamPort: Int, certificates: TestCertificates) -> String {
        NginxProcess.configuration(
            folder: folder,
            accessLog: """
                log_format line '$request_method $request_uri $status';
                access_log \(folder)/logs/access.log line;
                """,
            http: """
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
                """)
    }
}
