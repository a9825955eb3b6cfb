import BlobStream
import BlobStreamS3
import Foundation
import SwiftStoreTestServer
import Testing

/// What an upload from a file holds in memory does not grow with the part size: a part
/// larger than 8 MiB is read twice from the file (hashed, then streamed as it is sent).
@Suite("S3 uploads from a file: memory bounded whatever the part size", .serialized)
struct S3UploadMemoryTests {
    /// `blobstream ARGS` under GNU time: its exit status, stderr, and peak resident size (KiB,
    /// wait4's ru_maxrss of the tool's own process).
    static func measured(_ arguments: [String], environment: [String: String], folder: URL) throws -> (
        status: Int32, stderr: String, peakKiB: Int
    ) {
        let report = folder.appendingPathComponent("peak-\(UUID().uuidString)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/time")
        process.arguments = ["-f", "%M", "-o", report.path, S3Tool.binary] + arguments
        process.environment = environment
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let text = (try? String(contentsOf: report, encoding: .utf8)) ?? ""
        let peak = text.split(separator: "\n").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        return (process.terminationStatus, stderr, peak ?? .max)
    }

    @Test("52 MiB in 24 MiB parts, 2 in flight: peak within 32 MiB of a 1 KB upload's (two parts held: 48 MiB)")
    func largePartsStreamed() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        // A sparse file with a few written regions: 2 parts of 24 MiB and one of 4 MiB.
        let size = (52 << 20) + 12_345
        let path = fixture.folder.appendingPathComponent("large.bin").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        for (offset, seed) in [(0, 1), (30 << 20, 2), (size - (1 << 20), 3)] as [(Int, UInt64)] {
            try handle.seek(toOffset: UInt64(offset))
            try handle.write(contentsOf: StoreFixture.bytes(1 << 20, seed: seed))
        }
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
        let (small, _) = try fixture.file("small.bin", count: 1000)
        let environment = S3Tool.environment(fixture.store, home: fixture.folder)
        func upload(_ path: String, key: String) throws -> (status: Int32, stderr: String, peakKiB: Int) {
            try Self.measured(
                [
                    "upload", path, "--to", "s3://\(fixture.bucket)/\(key)", "--endpoint-url", fixture.store.endpoint,
                    "--part-size", "24MiB", "--parallel", "2",
                ], environment: environment, folder: fixture.folder)
        }
        let baseline = try upload(small, key: "small.bin")
        #expect(baseline.status == 0, "\(baseline.stderr)")
        let large = try upload(path, key: "large.bin")
        #expect(large.status == 0, "\(large.stderr)")
        #expect(large.stderr.contains("in 3 parts"), "\(large.stderr)")
        #expect(
            large.peakKiB < baseline.peakKiB + 32 * 1024,
            "peak \(large.peakKiB) KiB against \(baseline.peakKiB) KiB for 1000 bytes")
        let stored = try await fixture.store.swiftAPI.get(fixture.bucket, "large.bin")
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(stored.body.count == size)
        #expect(sha256Hex(stored.body) == sha256Hex(file))
    }
}
