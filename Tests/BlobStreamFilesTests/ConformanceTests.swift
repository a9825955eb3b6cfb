import BlobStream
import BlobStreamFiles
import BlobStreamTestSupport
import Foundation
import Testing

/// The contract checks of `BlobStreamTestSupport`, run against both sources.
@Suite("Conformance")
struct ConformanceTests {
    @Test("FileDataSource passes the conformance checks", arguments: [0, 1, 200_003])
    func fileDataSource(size: Int) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(size)
        let path = try dir.file("conformance.bin", bytes)
        let missing = dir.path("missing.bin")
        let findings = SourceConformance.check(
            expected: bytes,
            failing: { FileDataSource(path: missing) },
            makeSource: { FileDataSource(path: path) })
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("FileHandleDataSource over a regular file passes the conformance checks", arguments: [0, 1, 200_003])
    func fileHandleDataSource(size: Int) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(size)
        let path = try dir.file("conformance.bin", bytes)
        let directory = dir.path
        let findings = SourceConformance.check(
            expected: bytes,
            failing: { FileHandleDataSource(fileHandle: FileHandle(forReadingAtPath: directory)!, closeOnClose: true) },
            makeSource: { FileHandleDataSource(fileHandle: FileHandle(forReadingAtPath: path)!, closeOnClose: true) })
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("FileHandleDataSource over a pipe passes the conformance checks (its moves are forward)")
    func pipe() throws {
        // The checks move back to a third of the bytes after reading 100: forward for a
        // read-and-discard source as long as a third is more than 100 bytes.
        let bytes = sampleBytes(200_003)
        let findings = SourceConformance.check(expected: bytes) {
            let pipe = Pipe()
            startWriter(pipe.fileHandleForWriting, bytes)
            return FileHandleDataSource(fileHandle: pipe.fileHandleForReading, closeOnClose: true)
        }
        #expect(findings.isEmpty, "\(findings)")
    }
}
