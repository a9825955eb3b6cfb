import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamTestSupport
import Crypto
import Foundation
@_exported import SharedTestHelpers
import Testing

// Helpers shared by the archive tests: running bsdtar / GNU tar / ar, a temporary folder,
// deterministic bytes, draining a stream, pipes.

/// What a command gave.
struct Ran {
    var status: Int32
    var output: Data
    var errors: String
}

/// Runs `/usr/bin/<tool>` (or an absolute path) with a UTF-8 locale, in `directory`.
@discardableResult
func run(_ tool: String, _ arguments: [String], in directory: String? = nil, check: Bool = true) throws -> Ran {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool.hasPrefix("/") ? tool : "/usr/bin/\(tool)")
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    var environment = ProcessInfo.processInfo.environment
    environment["LC_ALL"] = "C.UTF-8"
    process.environment = environment
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read stderr on a thread of its own so that neither pipe can fill up and block.
    final class Box: @unchecked Sendable { var data = Data() } // Unchecked: written before `done`, read after.
    let errBox = Box()
    let done = DispatchSemaphore(value: 0)
    Thread {
        errBox.data = err.fileHandleForReading.readDataToEndOfFile()
        done.signal()
    }.start()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    done.wait()
    process.waitUntilExit()
    let ran = Ran(
        status: process.terminationStatus, output: output, errors: String(decoding: errBox.data, as: UTF8.self))
    if check && ran.status != 0 {
        throw TestFailure("\(tool) \(arguments.joined(separator: " ")) failed with status \(ran.status): \(ran.errors)")
    }
    return ran
}

/// A fresh temporary folder.
func makeTemporaryDirectory(_ label: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent(
        "blobstream-archive-\(label)-\(UUID().uuidString)"
    ).path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// The committed file `path` under the repository's Fixtures/, once its SHA-256 is
/// `expected` (the value its folder's README lists).
func committedFixture(_ path: String, sha256 expected: String) throws -> Data {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/" + path)
    let data = try Data(contentsOf: url)
    guard sha256(data) == expected else {
        throw TestFailure("Fixtures/\(path) has sha256 \(sha256(data)), not \(expected)")
    }
    return data
}

func write(_ data: Data, to path: String) throws {
    try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try data.write(to: URL(fileURLWithPath: path))
}

/// Deterministic pseudo-random bytes (SplitMix64).
func randomBytes(_ count: Int, seed: UInt64) -> Data { TestBytes.random(count, seed: seed) }

/// Text-like, compressible bytes.
func textBytes(_ count: Int, seed: UInt64) -> Data {
    TestBytes.text(
        count, seed: seed, words: ["archive", "member", "tar", "zip", "offset", "blob", "header", "block", "the", "a"],
        lineEvery: 11)
}

/// What reading a stream to its end gave.
struct Drained {
    var data: Data
    /// The last `read` result: 0 for a clean end, −1 for an error.
    var last: Int
    /// The source's error (`streamError`'s cause) when the stream failed.
    var error: BlobStreamError?
    var length: Int64?
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
    let length = source.length
    stream.close()
    return Drained(data: out, last: n, error: error, length: length)
}

/// A registry with files, gzip-less archives and archives.
func makeRegistry() -> DataSourceRegistry {
    let registry = DataSourceRegistry()
    FileSources.register(in: registry)
    ArchiveSources.register(in: registry)
    return registry
}

/// A `FileHandleDataSource` over the read end of a pipe whose write end is fed `data` by a
/// thread of its own: a sequential upstream that cannot seek.
func pipeSource(_ data: Data, chunk: Int = 16 * 1024) -> FileHandleDataSource {
    signal(SIGPIPE, SIG_IGN) // a reader that stops early must not kill the test process
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0)
    let writeEnd = fds[1]
    Thread {
        var offset = 0
        data.withUnsafeBytes { raw in
            while offset < raw.count {
                let n = Glibc.write(writeEnd, raw.baseAddress! + offset, min(chunk, raw.count - offset))
                if n <= 0 { break } // the reader closed its end
                offset += n
            }
        }
        close(writeEnd)
    }.start()
    return FileHandleDataSource(
        fileHandle: FileHandle(fileDescriptor: fds[0], closeOnDealloc: false), closeOnClose: true)
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

/// Changes one byte of the archive at `path` in its second half that the index's identity does
/// not sample (its modification time kept, to the nanosecond), so that a read through `index`
/// goes on and meets the damage in the compressed data; then reads every member of `files`
/// through the index. Returns how many failed: each failure is `.corrupt` or `.truncated` and
/// names the member and the archive; every member that reads cleanly has its bytes.
func membersFailedAfterAnUnsampledFlip(
    archive path: String, index: ArchiveIndex, files: [String: Data]
) throws -> Int {
    let pristine = try Data(contentsOf: URL(fileURLWithPath: path))
    try run("cp", ["-p", path, path + ".time"])
    var flipped: Int?
    for candidate in stride(from: pristine.count / 2, to: pristine.count - 4096, by: 7_919) {
        var damaged = pristine
        damaged[candidate] ^= 0x20
        try damaged.write(to: URL(fileURLWithPath: path))
        try run("touch", ["-r", path + ".time", path])
        if (try? index.check(againstFileAtPath: path)) != nil {
            flipped = candidate
            break
        }
    }
    #expect(flipped != nil, "no byte outside the identity's samples")
    var failures = 0
    for (name, expected) in files {
        let result = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(index)))
        if let error = result.error {
            failures += 1
            #expect(error.code == .corrupt || error.code == .truncated, "\(name): \(error.code)")
            #expect(error.message.contains(name) && error.message.contains(path), "\(error.message)")
        } else {
            #expect(result.data == expected, "\(name)")
        }
    }
    return failures
}
