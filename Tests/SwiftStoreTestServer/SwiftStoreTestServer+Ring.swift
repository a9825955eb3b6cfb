import Foundation
import Glibc

extension SwiftStoreTestServer {
    /// One object server of the store's ring: a test may kill it (SIGKILL) or make it hang
    /// (SIGSTOP: it accepts connections and answers nothing).
    public struct ObjectServer: Decodable, Sendable, Equatable {
        /// `object`, or `object-1`…`object-N` in a ring.
        public let name: String
        /// Its process id (of the current run: ``revive()`` changes it).
        public let pid: Int32
        /// The port it listens on, on 127.0.0.1.
        public let port: Int
        /// The ring's device it serves (`d1`…), a folder under `store/node`.
        public let device: String
        /// Its configuration file (`swift-object-replicator` takes it).
        public let config: String
    }

    /// The object servers of the current run, in the ring's order (one unless started with
    /// ``start(replicas:)``).
    public var objectServers: [ObjectServer] { running.withLock { $0.process == nil ? [] : $0.objectServers } }

    /// The folder of `device` (`d1`…): Swift keeps each object there as a `.data` file holding
    /// its bytes.
    public func deviceFolder(_ device: String) -> URL {
        folder.appendingPathComponent("store/node").appendingPathComponent(device)
    }

    /// Starts again the object servers that died (a test killed them) and waits until they
    /// listen (`swift-store revive`); ``objectServers`` then names the new processes.
    public func revive() async throws {
        let state = try await Self.offThePool { try self.runScript("revive") }
        running.withLock {
            $0.pids = state.pids
            $0.objectServers = state.objectServers ?? []
        }
    }

    /// Runs the object replicator once for every object server (`swift-store replicate`,
    /// ssync): afterwards each device holds every object the ring gives it.
    public func replicate() async throws {
        _ = try await Self.offThePool { try self.runScript("replicate") }
    }

    /// Sends `signal` to every object server in `servers` that runs.
    public func signal(_ signal: Int32, _ servers: [ObjectServer]) {
        for server in servers where Self.isRunning(server.pid) { kill(server.pid, signal) }
    }

    /// Runs `scripts/swift-store COMMAND FOLDER/store` to its end and decodes its JSON line.
    private func runScript(_ command: String) throws -> State {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LifelineProcess.script("swift-store"))
        process.arguments = [command, folder.appendingPathComponent("store").path]
        let output = Pipe()
        let errors = folder.appendingPathComponent("\(command)-stderr.txt")
        FileManager.default.createFile(atPath: errors.path, contents: nil)
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errors)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let line = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw Failure(description: "swift-store \(command) failed (exit \(process.terminationStatus)): \(message)")
        }
        do {
            return try JSONDecoder().decode(State.self, from: line)
        } catch {
            throw Failure(
                description: "swift-store \(command) printed \(String(decoding: line, as: UTF8.self)): \(error)")
        }
    }
}
