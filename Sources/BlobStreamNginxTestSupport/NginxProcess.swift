import Foundation
import Glibc

/// One nginx process of a test server's own, in a temporary folder of its own, on free ports
/// of 127.0.0.1: what `NginxTestServer` and the package's other nginx test peers (static
/// files, a TLS reverse proxy) share. `stop()` kills it and removes the folder.
package struct NginxProcess: Sendable {
    /// The process.
    package let pid: pid_t
    /// The folder holding the configuration, `logs/`, `tmp/` and what the caller put there.
    package let folder: URL
    /// The ports it listens on, as many as were asked for, all answering.
    package let ports: [Int]

    /// Starts nginx with the configuration `configuration` writes for a new folder and
    /// `portCount` distinct free ports, and waits until every port answers; retries with
    /// other ports (and a new folder) when a port was taken meanwhile.
    ///
    /// - Parameters:
    ///   - name: what the server is, for the error when it does not start.
    ///   - folderPrefix: the temporary folder's name before its UUID.
    ///   - subfolders: folders to make in it besides `logs` and `tmp`.
    ///   - configuration: the nginx.conf for the folder and the ports; it may write files
    ///     (certificates, say) in the folder first.
    /// - Throws: `NginxTestServer.Failure` when nginx is missing or did not start (with its
    ///   error log), or what `configuration` throws.
    package static func start(
        name: String, folderPrefix: String, subfolders: [String] = [], portCount: Int = 1,
        configuration: (_ folder: URL, _ ports: [Int]) throws -> String
    ) throws -> NginxProcess {
        let nginx = try NginxTestServer.binary()
        var lastError = ""
        for _ in 0..<5 {
            let ports = try (0..<portCount).map { _ in try NginxTestServer.freePort() }
            guard Set(ports).count == portCount else { continue }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "\(folderPrefix)-\(UUID().uuidString)")
            for sub in ["logs", "tmp"] + subfolders {
                try FileManager.default.createDirectory(
                    at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
            }
            let conf = folder.appendingPathComponent("nginx.conf")
            try configuration(folder, ports).write(to: conf, atomically: true, encoding: .utf8)
            // posix_spawn and waitpid rather than Foundation's Process, whose
            // waitUntilExit can hang when called from a test's deinit.
            let pid = try NginxTestServer.spawn(
                nginx, ["nginx", "-e", folder.path + "/logs/error.log", "-p", folder.path, "-c", conf.path])
            if ports.allSatisfy({ NginxTestServer.waitForPort($0, pid: pid) }) {
                return NginxProcess(pid: pid, folder: folder, ports: ports)
            }
            NginxTestServer.killAndReap(pid)
            lastError =
                (try? String(contentsOf: folder.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: folder)
        }
        throw NginxTestServer.Failure(description: "\(name) did not start: \(lastError)")
    }

    /// An nginx.conf for `folder`: one process in the foreground, its pid, error log and
    /// temporary files in the folder, then an `http` block holding `http` (server blocks, and
    /// any other `http` directive). Requests are not logged unless `accessLog` says how.
    package static func configuration(folder: String, accessLog: String = "access_log off;", http: String) -> String {
        """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(folder)/nginx.pid;
        error_log \(folder)/logs/error.log warn;
        events { worker_connections 64; }
        http {
        \(accessLog)
        client_body_temp_path \(folder)/tmp/body;
        proxy_temp_path \(folder)/tmp/proxy;
        fastcgi_temp_path \(folder)/tmp/fastcgi;
        uwsgi_temp_path \(folder)/tmp/uwsgi;
        scgi_temp_path \(folder)/tmp/scgi;
        \(http)
        }
        """
    }

    /// Kills nginx (every answer has been received when a test stops it, so no graceful exit
    /// is needed, which nginx without a master process is slow to make) and removes its folder.
    package func stop() {
        NginxTestServer.killAndReap(pid)
        try? FileManager.default.removeItem(at: folder)
    }
}
