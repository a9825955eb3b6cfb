import Foundation
import Glibc

/// A real OpenStack Swift with its S3 API (s3api + tempauth) on 127.0.0.1 for tests, run by
/// the repository's `scripts/swift-store run DIR` under a temporary folder.
///
/// Starting a store takes ~7 s: suites share one with ``shared()`` (started on first use,
/// stopped when the test process exits) and keep apart by using their own bucket names
/// (``uniqueBucketName(_:)``). A test that needs a store of its own (e.g. to stop it
/// mid-upload) calls ``start()`` and ``stop()``.
///
/// The store lives as long as the pipe to the script's standard input stays open: `stop()`
/// closes it, and so does the end of the test process however it ends, so no server
/// outlives the tests.
///
/// S3: ``endpoint`` (path-style), ``accessKey`` `test:tester`, ``secretKey`` `testing`,
/// ``region`` `us-east-1`. Swift's own API, independent of any S3 client: ``swiftAPI``.
public final class SwiftStoreTestServer: Sendable {
    /// The S3 (and Swift) endpoint, e.g. `http://127.0.0.1:41234`.
    public let endpoint: String
    /// The S3 access key (the tempauth user `test:tester`).
    public let accessKey: String
    /// The S3 secret key (the tempauth key `testing`).
    public let secretKey: String
    /// The region s3api is configured for; requests must be signed for it.
    public let region: String
    /// tempauth's authentication URL (`GET` with `X-Auth-User`/`X-Auth-Key`).
    public let authURL: String
    /// The Swift storage URL of the test account, e.g. `http://127.0.0.1:41234/v1/AUTH_test`.
    public let storageURL: String
    /// The temporary folder holding the store's data, configuration and logs (`store/log`).
    public let folder: URL
    /// The process ids of the store's supervisor and servers, by name (of the current run:
    /// ``restart()`` changes them; empty while paused or stopped).
    public var pids: [String: Int32] { running.withLock { $0.process == nil ? [:] : $0.pids } }
    /// Swift's own API with a tempauth token, to check what the store holds.
    public let swiftAPI: SwiftAPI
    /// Seconds from starting the script to its ready line (the first start, not a restart).
    public let startupDuration: TimeInterval

    let running: LockedRun

    /// The failure to start or use the store, with the script's message and the servers' logs.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed, with the script's message and the servers' logs.
        public let description: String
    }

    /// Starts a store of its own under a new temporary folder (bounded: the script gives up
    /// after 60 s with the servers' logs in its message).
    public static func start() async throws -> SwiftStoreTestServer {
        try await offThePool { try SwiftStoreTestServer() }
    }

    /// Starts a store of its own whose object ring has `replicas` devices, each served by an
    /// object server of its own (``objectServers``), with as many replicas of every object,
    /// and a proxy quick to fail over (`swift-store run --replicas N`).
    public static func start(replicas: Int) async throws -> SwiftStoreTestServer {
        try await offThePool { try SwiftStoreTestServer(replicas: replicas) }
    }

    /// ``start()`` for a caller that may block (not on the cooperative thread pool).
    static func startBlocking() throws -> SwiftStoreTestServer {
        try SwiftStoreTestServer()
    }

    private init(replicas: Int = 1) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("swift-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let process: LifelineProcess
        let state: State
        let started = Date()
        do {
            (process, state) = try Self.launch(folder, replicas: replicas)
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
        self.endpoint = state.endpoint
        self.accessKey = state.accessKey
        self.secretKey = state.secretKey
        self.region = state.region
        self.authURL = state.authURL
        self.storageURL = state.storageURL
        self.folder = folder
        self.startupDuration = Date().timeIntervalSince(started)
        self.running = LockedRun(process: process, pids: state.pids, objectServers: state.objectServers ?? [])
        self.swiftAPI = SwiftAPI(authURL: state.authURL, user: state.accessKey, key: state.secretKey)
    }

    /// Runs `swift-store run FOLDER/store` and reads its line.
    private static func launch(_ folder: URL, replicas: Int = 1) throws -> (LifelineProcess, State) {
        let process = try LifelineProcess(
            "swift-store", ["run", "--replicas", String(replicas), folder.appendingPathComponent("store").path],
            stderrFile: folder.appendingPathComponent("stderr.txt").path)
        do {
            return (process, try JSONDecoder().decode(State.self, from: Data(process.line.utf8)))
        } catch {
            process.stop()
            throw Failure(description: "swift-store printed \(process.line): \(error)")
        }
    }

    /// The JSON line `swift-store` prints once the store answers S3 requests.
    struct State: Decodable {
        let endpoint, authURL, storageURL, accessKey, secretKey, region: String
        let pids: [String: Int32]
        let objectServers: [ObjectServer]?

        enum CodingKeys: String, CodingKey {
            case endpoint, region, pids
            case objectServers = "object_servers"
            case authURL = "auth_url"
            case storageURL = "storage_url"
            case accessKey = "access_key"
            case secretKey = "secret_key"
        }
    }

    /// Stops the store's processes and waits for them, but keeps its data and configuration:
    /// until ``restart()`` every connection to ``endpoint`` is refused (a store that went away
    /// mid-upload).
    public func pause() async {
        _ = try? await Self.offThePool { self.stopProcesses() }
    }

    /// Starts a paused store again with the data it held, on the same ``endpoint`` (the
    /// ports are reused; if another program took one meanwhile, this throws).
    public func restart() async throws {
        try await Self.offThePool {
            try self.running.withLock { run in
                guard run.process == nil, !run.removed else {
                    throw Failure(description: "swift-store: restart() of a store that is running or stopped")
                }
                let (process, state) = try Self.launch(self.folder)
                guard state.endpoint == self.endpoint else {
                    process.stop()
                    throw Failure(description: "swift-store restarted at \(state.endpoint), not \(self.endpoint)")
                }
                run.process = process
                run.pids = state.pids
                run.objectServers = state.objectServers ?? []
            }
        }
    }

    /// Stops every process of the store, waits for them, and removes its folder.
    public func stop() {
        stopProcesses()
        running.withLock { $0.removed = true }
        try? FileManager.default.removeItem(at: folder)
    }

    private func stopProcesses() {
        running.withLock { run in
            run.process?.stop(alsoKill: Array(run.pids.values))
            run.process = nil
        }
    }

    deinit { stop() }

    /// The last lines of the store's logs (servers' syslog lines and output), for failure messages.
    public func logs() -> String {
        let log = folder.appendingPathComponent("store/log")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: log.path))?.sorted() ?? []
        return names.map { name in
            let text = (try? String(contentsOf: log.appendingPathComponent(name), encoding: .utf8)) ?? ""
            return "--- \(name)\n" + text.split(separator: "\n").suffix(30).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// A bucket name no other test uses: `prefix` plus a random suffix, lower case, S3-valid.
    public static func uniqueBucketName(_ prefix: String = "test") -> String {
        "\(prefix.lowercased())-\(UUID().uuidString.lowercased().prefix(13))"
    }

    /// True while the process `pid` exists and is not a zombie.
    public static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
    }
}

/// The store's current run, under a lock (a test, `deinit` and the exit handler may race).
final class LockedRun: @unchecked Sendable {
    // Unchecked Sendable: `state` is only touched under `lock`.
    struct State {
        var process: LifelineProcess?
        var pids: [String: Int32]
        var objectServers: [SwiftStoreTestServer.ObjectServer]
        var removed = false
    }
    private let lock = NSLock()
    private var state: State

    init(process: LifelineProcess, pids: [String: Int32], objectServers: [SwiftStoreTestServer.ObjectServer]) {
        state = State(process: process, pids: pids, objectServers: objectServers)
    }

    func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        try lock.withLock { try body(&state) }
    }
}

/// Lets `stop()` do its work once, whichever thread calls it first (a test, `deinit`, exit).
final class StoreStopOnce: @unchecked Sendable {
    // Unchecked Sendable: `stopped` is only touched under `lock`.
    private let lock = NSLock()
    private var stopped = false

    /// True for the first call only.
    func first() -> Bool {
        lock.withLock {
            defer { stopped = true }
            return !stopped
        }
    }
}
