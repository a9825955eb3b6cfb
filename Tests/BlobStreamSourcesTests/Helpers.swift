import BlobStream
import BlobStreamArchive
import BlobStreamTestSupport
import Foundation
@_exported import SharedTestHelpers

// Helpers of the composition root's tests: running bsdtar, gzip and zstd, a temporary
// folder, deterministic bytes, draining a stream, and archives made at test time.

/// What a command gave.
struct Ran {
    var status: Int32
    var output: Data
    var errors: String
}

/// Runs `/usr/bin/<tool>` (or an absolute path) with a UTF-8 locale, in `directory`.
@discardableResult
func run(_ tool: String, _ arguments: [String], in directory: String? = nil) throws -> Ran {
    let folder = try makeTemporaryDirectory("run")
    defer { try? FileManager.default.removeItem(atPath: folder) }
    // Standard error to a file, so that neither pipe can fill up and block.
    let errorsPath = folder + "/stderr"
    guard FileManager.default.createFile(atPath: errorsPath, contents: nil) else {
        throw TestFailure("cannot make \(errorsPath)")
    }
    let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsPath))
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool.hasPrefix("/") ? tool : "/usr/bin/\(tool)")
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    var environment = ProcessInfo.processInfo.environment
    environment["LC_ALL"] = "C.UTF-8"
    process.environment = environment
    let out = Pipe()
    process.standardOutput = out
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try errors.close()
    let ran = Ran(
        status: process.terminationStatus, output: output,
        errors: String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: errorsPath))) ?? Data(), as: UTF8.self))
    if ran.status != 0 {
        throw TestFailure("\(tool) \(arguments.joined(separator: " ")) failed with status \(ran.status): \(ran.errors)")
    }
    return ran
}

/// A fresh temporary folder.
func makeTemporaryDirectory(_ label: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent(
        "blobstream-sources-\(label)-\(UUID().uuidString)"
    ).path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func write(_ data: Data, to path: String) throws {
    try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try data.write(to: URL(fileURLWithPath: path))
}

/// Deterministic pseudo-random bytes (SplitMix64).
func randomBytes(_ count: Int, seed: UInt64) -> Data { TestBytes.random(count, seed: seed) }

/// What reading a stream to its end gave.
struct Drained {
    var data: Data
    /// The last `read` result: 0 for a clean end, −1 for an error.
    var last: Int
    /// The source's error (`streamError`'s cause) when the stream failed.
    var error: BlobStreamError?
}

/// Opens a synchronous stream over `source` and reads it to its end.
func drain(_ source: any BlobDataSource, size: Int = 65_536, offset: Int? = nil) -> Drained {
    let stream = BlobInputStream(dataSource: source, mode: .synchronous)
    if let offset { _ = stream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey) }
    stream.open()
    let (out, n) = stream.readToEnd(chunkSize: size)
    let error =
        (stream.streamError as? BlobStreamError)?.cause as? BlobStreamError
        ?? stream.streamError as? BlobStreamError
    stream.close()
    return Drained(data: out, last: n, error: error)
}

/// The names of the regular files an archive index lists.
func memberNames(_ index: ArchiveIndex) -> [String] {
    index.members.filter { $0.type == .file }.map { String(decoding: $0.nameBytes, as: UTF8.self) }
}

/// `name` without a leading `./`.
func stripDotSlash(_ name: String) -> String {
    var name = name
    while name.hasPrefix("./") { name.removeFirst(2) }
    return name
}

/// One tree of files written at test time, and the same tree as a pax tar and as zips
/// (deflated, stored, written to a pipe), made with bsdtar.
struct ArchiveFixtures: Sendable {
    /// Regular files of the tree: relative path (no `./`) → bytes.
    let files: [String: Data]
    /// Format label → archive path.
    let archives: [String: String]

    /// The tree: small, empty, large random, compressible, Unicode, long and "!" names.
    static let tree: [String: Data] = [
        "a.txt": Data("hello, archive\n".utf8),
        "empty.txt": Data(),
        "sub/big.bin": randomBytes(300_000, seed: 7),
        "sub/text.txt": TestBytes.text(
            200_000, seed: 8,
            words: ["archive", "member", "tar", "zip", "offset", "blob", "header", "block", "the", "a"],
            lineEvery: 11),
        "фото/été.jpg": randomBytes(5_000, seed: 9),
        "bang!name.txt": Data("a name with a bang\n".utf8),
        String(repeating: "d", count: 60) + "/" + String(repeating: "e", count: 60) + "/long-name.txt": Data(
            "deep and long\n".utf8),
    ]

    /// Built once per test process.
    static let shared: Result<ArchiveFixtures, TestFailure> = {
        do { return .success(try build()) } catch { return .failure(TestFailure("\(error)")) }
    }()

    static func get() throws -> ArchiveFixtures { try shared.get() }

    private static func build() throws -> ArchiveFixtures {
        let root = try makeTemporaryDirectory("fixtures")
        removeAtExit(root)
        let tree = root + "/tree"
        for (name, data) in Self.tree { try write(data, to: tree + "/" + name) }
        try FileManager.default.createDirectory(atPath: tree + "/emptydir", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: tree + "/link", withDestinationPath: "a.txt")
        // Fixed times so that the archives do not depend on when the test runs.
        try run("find", [tree, "-exec", "touch", "-h", "-d", "@1700000000", "{}", "+"])
        var archives: [String: String] = [:]
        for (label, arguments) in [
            ("pax.tar", ["--format", "pax", "-cf"]), ("zip", ["--format", "zip", "-cf"]),
            ("stored.zip", ["--format", "zip", "--options", "zip:compression=store", "-cf"]),
        ] {
            let path = root + "/fixture." + label
            try run("bsdtar", arguments + [path, "."], in: tree)
            archives[label] = path
        }
        // A zip written to a pipe: sizes and CRCs go in data descriptors after the data.
        let streamed = root + "/fixture.streamed.zip"
        try write(try run("bsdtar", ["--format", "zip", "-cf", "-", "."], in: tree).output, to: streamed)
        archives["streamed.zip"] = streamed
        return ArchiveFixtures(files: Self.tree, archives: archives)
    }
}

/// Folders removed when the test process exits (fixtures shared by every test).
private let leftovers = Locked<[String]>([])

/// Removes `path` (recursively) when the process exits.
func removeAtExit(_ path: String) {
    let first = leftovers.withLock { list in
        list.append(path)
        return list.count == 1
    }
    if first {
        atexit {
            for path in leftovers.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
    }
}
