import Crypto
import Foundation
import NginxTestServer

/// Runs the built `blobstream` tool and the system's reference tools for the tests.
enum Tool {
    /// The folder of the built products (where the test runner itself lives).
    static let binDirectory: URL = {
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return runner.deletingLastPathComponent()
    }()

    /// The repository's root (three levels above this file).
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var fixtures: URL { repository.appendingPathComponent("Fixtures") }

    struct Result {
        var status: Int32
        var stdout: Data
        var stderr: String
        /// The program's own run, from its start to its exit: not the wait for a free slot
        /// (`ProgramRuns`) before it.
        var duration: Duration
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `blobstream ARGS` to its end.
    static func blobstream(_ arguments: [String], stdin: Data? = nil) async throws -> Result {
        try await run(binDirectory.appendingPathComponent("blobstream").path, arguments, stdin: stdin)
    }

    /// Runs a bash command line with `$BLOBSTREAM` set to the tool.
    static func shell(_ command: String) async throws -> Result {
        try await run(
            "/bin/bash", ["-c", command],
            environment: ["BLOBSTREAM": binDirectory.appendingPathComponent("blobstream").path])
    }

    /// Runs `executable ARGS` to its end, off the cooperative pool (`ProgramRuns`).
    static func run(
        _ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]
    ) async throws -> Result {
        try await ProgramRuns.run { try runBlocking(executable, arguments, stdin: stdin, environment: environment) }
    }

    private static func runBlocking(
        _ executable: String, _ arguments: [String], stdin: Data?, environment: [String: String]
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        let started = ContinuousClock.now
        try process.run()
        let writer = Thread {
            if let stdin { input.fileHandleForWriting.write(stdin) }
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        // stderr is read on a thread of its own (a full stderr pipe must not stall the
        // tool while stdout is read here); the box hands its bytes over under a lock, and
        // the semaphore says when they are all there.
        let errBox = DataBox()
        let errDone = DispatchSemaphore(value: 0)
        Thread {
            errBox.data = err.fileHandleForReading.readDataToEndOfFile()
            errDone.signal()
        }.start()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let duration = ContinuousClock.now - started
        errDone.wait()
        return Result(
            status: process.terminationStatus, stdout: stdout, stderr: String(decoding: errBox.data, as: UTF8.self),
            duration: duration)
    }

    struct FixtureMismatch: Error, CustomStringConvertible { let description: String }

    /// The committed file `path` under Fixtures/, once its SHA-256 is `expected` (the value
    /// its folder's README lists).
    static func fixture(_ path: String, sha256 expected: String) throws -> Data {
        let data = try Data(contentsOf: fixtures.appendingPathComponent(path))
        guard sha256(data) == expected else {
            throw FixtureMismatch(description: "Fixtures/\(path) has sha256 \(sha256(data)), not \(expected)")
        }
        return data
    }

    static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}

/// Carries stderr's bytes from the reading thread to the caller.
final class DataBox: @unchecked Sendable {
    // Unchecked Sendable: `stored` is touched only with `lock` held.
    private let lock = NSLock()
    private var stored = Data()

    var data: Data {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
