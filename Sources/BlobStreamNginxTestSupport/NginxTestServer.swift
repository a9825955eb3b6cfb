import Foundation
import Glibc
import Synchronization

/// An nginx serving WebDAV PUT on 127.0.0.1 for upload tests: started in a temporary folder
/// on a free port, stopped (and the folder removed) by `stop()`. Needs the `nginx` binary
/// (`$NGINX`, or `/usr/sbin/nginx` as Debian's `nginx-light` installs it); it never listens
/// on anything but loopback.
///
/// ```swift
/// let server = try NginxTestServer()
/// defer { server.stop() }
/// let result = try await HTTPClientUploader().upload(body, to: "\(server.baseURL)/files/a.jpg").result
/// #expect(result.statusCode == 201)
/// #expect(server.stored("a.jpg") == bytes)
/// ```
///
/// - `PUT /files/<path>` stores the body under `root/files/<path>` (chunked bodies too).
/// - `/deny/…` answers 403, `/slow-close/…` closes the connection without an answer.
/// - `/redirect-307/<path>` and `/redirect-308/<path>` redirect (307, 308) to
///   `/files/<path>` by an absolute `http://127.0.0.1:PORT/…` Location, before reading the
///   body; `/redirect-303/<path>` answers 303 the same way; `/loop/<path>` redirects (307)
///   to itself.
public final class NginxTestServer: @unchecked Sendable {
    // Unchecked Sendable: every stored property is set in `init` and only read after.
    /// The port nginx listens on, on 127.0.0.1.
    public var port: Int { process.ports[0] }
    /// The temporary folder holding nginx's configuration, logs and the stored files;
    /// removed by `stop()`.
    public var folder: URL { process.folder }
    private let process: NginxProcess
    private let once = StopOnce()

    /// The stored files' root.
    public var root: URL { folder.appendingPathComponent("www") }

    /// The base URL, e.g. `http://127.0.0.1:41234`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Why the server (or a test peer) could not start: nginx missing, no free port, a
    /// failed system call.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong, and what to do where there is something to do.
        public let description: String

        /// Makes a failure (for the package's other test peers).
        package init(description: String) { self.description = description }
    }

    /// The nginx binary: `$NGINX`, or the first of the usual places.
    package static func binary() throws -> String {
        if let path = ProcessInfo.processInfo.environment["NGINX"] { return path }
        for path in ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        throw Failure(description: "nginx is not installed (make test installs it: scripts/install-deps nginx)")
    }

    /// Starts nginx; retries with another port if the one chosen was taken meanwhile.
    public init() throws {
        process = try NginxProcess.start(
            name: "nginx", folderPrefix: "nginx", subfolders: ["www/files"]
        ) { folder, ports in Self.config(folder: folder.path, port: ports[0]) }
    }

    /// Stops nginx and removes its folder.
    public func stop() {
        guard once.first() else { return }
        process.stop()
    }

    package static func spawn(_ path: String, _ argv: [String]) throws -> pid_t {
        var pid: pid_t = 0
        var cArgs = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else of this process's: a pipe another test is reading must see its end
        // when that test's writer closes it, not stay open in a long-lived nginx.
        _ = systemAddCloseFrom(&actions, 3)
        let rc = posix_spawn(&pid, path, &actions, nil, &cArgs, environ)
        guard rc == 0 else { throw Failure(description: "cannot start \(path): errno \(rc)") }
        return pid
    }

    /// Kills the process `pid` and waits for it, so that no zombie is left.
    package static func killAndReap(_ pid: pid_t) {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    deinit { stop() }

    /// The bytes stored at `files/<path>`, or nil when nothing was stored.
    public func stored(_ path: String) -> Data? {
        FileManager.default.contents(atPath: root.appendingPathComponent("files/" + path).path)
    }

    /// The configuration: WebDAV PUT under `/files/`, and the misbehaving locations above.
    static func config(folder: String, port: Int) -> String {
        NginxProcess.configuration(
            folder: folder,
            http: """
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
                    location ~ ^/redirect-307/(.*)$ { return 307 http://127.0.0.1:\(port)/files/$1; }
                    location ~ ^/redirect-308/(.*)$ { return 308 http://127.0.0.1:\(port)/files/$1; }
                    location ~ ^/redirect-303/(.*)$ { return 303 http://127.0.0.1:\(port)/files/$1; }
                    location ~ ^/loop/(.*)$ { return 307 http://127.0.0.1:\(port)/loop/$1; }
                }
                """)
    }

    /// The address 127.0.0.1:`port` (0: any free port, for `bind`).
    package static func loopback(port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        return addr
    }

    /// A port on 127.0.0.1 that nothing listens on (free when asked).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var addr = loopback(port: 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard bound else { throw Failure(description: "bind: errno \(errno)") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    package static func waitForPort(_ port: Int, pid: pid_t) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        while Date() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return false } // it exited
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = loopback(port: port)
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

/// Lets a `stop()` do its work once, whichever thread calls it first (a test, or `deinit`).
package final class StopOnce: Sendable {
    /// Set by the first call.
    private let stopped = Atomic<Bool>(false)

    /// Not stopped yet.
    package init() {}

    /// True for the first call only.
    package func first() -> Bool {
        !stopped.exchange(true, ordering: .acquiringAndReleasing)
    }
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+; declared only under `_GNU_SOURCE`):
/// the child closes every descriptor from `from` on before it runs the program.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func systemAddCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
