import BlobStreamTestSupport
import Foundation
@_exported import SharedTestHelpers

// Helpers of the compression kit's tests: the gzip and zstd programs as oracles,
// deterministic inputs, a temporary folder.

/// Runs `tool` (found on PATH) with `arguments`, `input` on its standard input; its standard
/// output. Throws when it exits with a status other than those in `accepting`.
func runTool(_ tool: String, _ arguments: [String], input: Data, accepting: Set<Int32> = [0]) throws -> Data {
    let folder = try IndexTestFolder()
    let inputPath = try folder.write("input", input)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [tool] + arguments
    process.standardInput = FileHandle(forReadingAtPath: inputPath)
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard accepting.contains(process.terminationStatus) else {
        throw TestFailure("\(tool) \(arguments.joined(separator: " ")) failed with status \(process.terminationStatus)")
    }
    return output
}

enum Gzip {
    /// `gzip -c -n` (no name, no time: deterministic) of `data`.
    static func compress(_ data: Data, level: Int = 6) throws -> Data {
        try runTool("gzip", ["-c", "-n", "-\(level)"], input: data)
    }
}

/// The `zstd` program on `input` with `arguments` (stdin to stdout): its output.
func zstd(_ arguments: [String], _ input: Data) throws -> Data {
    try runTool("zstd", ["-q", "-c"] + arguments, input: input)
}

/// Deterministic pseudo-random bytes (SplitMix64).
func randomBytes(_ count: Int, seed: UInt64) -> Data { TestBytes.random(count, seed: seed) }

/// Text-like, compressible bytes.
func textBytes(_ count: Int, seed: UInt64) -> Data {
    TestBytes.text(
        count, seed: seed,
        words: ["gzip", "stream", "member", "inflate", "offset", "blob", "source", "crc", "the", "a"],
        lineEvery: 13)
}

/// A folder of test files, removed at the end.
final class IndexTestFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "blobstream-compression-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    func write(_ name: String, _ data: Data) throws -> String {
        try data.write(to: url.appendingPathComponent(name))
        return path(name)
    }
}
