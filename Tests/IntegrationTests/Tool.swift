import Crypto
import Foundation

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
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `blobstream ARGS` (through bash when `shell` is given, for pipes and `<(…)`).
    static func blobstream(_ arguments: [String], stdin: Data? = nil) throws -> Result {
        try run(binDirectory.appendingPathComponent("blobstream").path, arguments, stdin: stdin)
    }

    /// Runs a bash command line with `$BLOBSTREAM` set to the tool.
    static func shell(_ command: String) throws -> Result {
        try run("/bin/bash", ["-c", command],
                environment: ["BLOBSTREAM": binDirectory.appendingPathComponent("blobstream").path])
    }

    static func run(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        let writer = Thread {
            if let stdin { input.fileHandleForWriting.write(stdin) }
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let errBox = DataBox()
        let errReader = Thread { errBox.data = err.fileHandleForReading.readDataToEndOfFile() }
        errReader.start()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while errReader.isExecuting || !errReader.isFinished { Thread.sleep(forTimeInterval: 0.005) }
        return Result(status: process.terminationStatus, stdout: stdout, stderr: String(decoding: errBox.data, as: UTF8.self))
    }

    static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}

/// Carries stderr's bytes from the reading thread (read after the thread finished).
final class DataBox: @unchecked Sendable {
    var data = Data()
}
