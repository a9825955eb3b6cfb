import Foundation
import Glibc

/// An nginx serving files on 127.0.0.1 for ranged reads: plain HTTP, and HTTPS with a
/// server certificate signed by a CA made for it (`TestCertificates`). Started in a
/// temporary folder on free ports, stopped (and the folder removed) by `stop()`.
///
/// - `/files/<path>`: the file `root/<path>`, with Range, ETag, Last-Modified and If-Match
///   as nginx serves static files; `PUT` stores a file there (WebDAV).
/// - `/norange/<path>`: the same file, but Range is ignored (`max_ranges 0`: 200 with the
///   whole file).
public final class StaticFileServer: @unchecked Sendable {
    // Unchecked Sendable: every stored property is set in `init` and only read after.
    /// The plain-HTTP port (127.0.0.1).
    public var port: Int { process.ports[0] }
    /// The HTTPS port (127.0.0.1).
    public var tlsPort: Int { process.ports[1] }
    /// nginx's folder (configuration, logs, `www/` with the files served), removed by `stop()`.
    public var folder: URL { process.folder }
    /// The CA a client must trust, and the server's certificate and key.
    public let certificates: TestCertificates
    private let process: NginxProcess
    private let once = StopOnce()

    /// The served files' folder.
    public var root: URL { folder.appendingPathComponent("www") }
    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// `https://127.0.0.1:TLSPORT` (its certificate is for 127.0.0.1 and localhost).
    public var tlsBaseURL: String { "https://127.0.0.1:\(tlsPort)" }

    /// Starts nginx (and makes the CA and the server certificate with openssl).
    public init() throws {
        var certificates: TestCertificates?
        process = try NginxProcess.start(
            name: "nginx (static files)", folderPrefix: "nginx-static", subfolders: ["www", "tls"], portCount: 2
        ) { folder, ports in
            let made = try TestCertificates(folder: folder.appendingPathComponent("tls"))
            certificates = made
            return Self.config(folder: folder.path, port: ports[0], tlsPort: ports[1], certificates: made)
        }
        self.certificates = certificates!
    }

    /// Writes `bytes` as the served file `path` (replacing it at once, by a rename, when it
    /// exists), and returns its URL under `/files/`.
    @discardableResult
    public func serve(_ bytes: [UInt8], as path: String) throws -> String {
        let target = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temporary = root.appendingPathComponent(".\(UUID().uuidString)")
        try Data(bytes).write(to: temporary)
        guard rename(temporary.path, target.path) == 0 else {
            throw NginxTestServer.Failure(description: "rename to \(target.path): errno \(errno)")
        }
        return baseURL + "/files/" + path
    }

    /// Stops nginx and removes its folder.
    public func stop() {
        guard once.first() else { return }
        process.stop()
    }

    deinit { stop() }

    static func config(folder: String, port: Int, tlsPort: Int, certificates: TestCertificates) -> String {
        NginxProcess.configuration(
            folder: folder,
            http: """
                server {
                    listen 127.0.0.1:\(port);
                    listen 127.0.0.1:\(tlsPort) ssl;
                    ssl_certificate \(certificates.serverCertificate.path);
                    ssl_certificate_key \(certificates.serverKey.path);
                    client_max_body_size 0;
                    location /files/ {
                        alias \(folder)/www/;
                        dav_methods PUT;
                        create_full_put_path on;
                        dav_access user:rw group:r all:r;
                    }
                    location /norange/ { alias \(folder)/www/; max_ranges 0; }
                }
                """)
    }
}

/// A CA and a server certificate for 127.0.0.1 and localhost signed by it, made with the
/// `openssl` command (EC P-256 keys, valid for two days) in `folder`.
public struct TestCertificates: Sendable {
    /// The CA's certificate (PEM): what a client must trust.
    public let caCertificate: URL
    /// The server's certificate (PEM) and key.
    public let serverCertificate: URL
    /// The server's private key (PEM).
    public let serverKey: URL

    /// Makes the CA and the server certificate.
    public init(folder: URL) throws {
        let path = { (name: String) in folder.appendingPathComponent(name).path }
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(
            ["req", "-x509"] + key + [
                "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=BlobStream Test CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        try Self.openssl(
            ["req"] + key + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=127.0.0.1"])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try Self.openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("server.ext"),
        ])
        caCertificate = folder.appendingPathComponent("ca.pem")
        serverCertificate = folder.appendingPathComponent("server.pem")
        serverKey = folder.appendingPathComponent("server.key")
    }

    /// Runs `openssl ARGS` and waits for it.
    static func openssl(_ arguments: [String]) throws {
        guard
            let binary = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw NginxTestServer.Failure(
                description: "openssl is not installed (make test installs it: scripts/install-deps openssl)")
        }
        let pid = try NginxTestServer.spawn(binary, ["openssl"] + arguments)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        guard status == 0 else {
            throw NginxTestServer.Failure(description: "openssl \(arguments.joined(separator: " ")) failed (\(status))")
        }
    }
}
