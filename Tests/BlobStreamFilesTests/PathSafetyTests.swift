import BlobStream
import BlobStreamFiles
import BlobStreamTestSupport
import Foundation
import Glibc
import Testing

@Suite("Paths with a NUL and FIFOs without a writer")
struct PathSafetyTests {
    @Test("a path with a NUL is an error naming it, not the file before the NUL")
    func nulInPath() throws {
        let dir = try TempDir()
        let real = dir.path + "/real.txt"
        try Data("the wrong file\n".utf8).write(to: URL(fileURLWithPath: real))
        let source = FileDataSource(path: real + "\u{0}.jpg")
        source.open()
        let error = sourceError(source)
        #expect(error?.code == .notFound)
        #expect(
            error?.message.contains("NUL") == true && error?.message.contains("real.txt%00.jpg") == true,
            "\(String(describing: error))")
        #expect(throws: BlobStreamError.self) { try FileSources.makeSource(path: real + "\u{0}") }
    }

    @Test("a FIFO with no writer fails after the writer timeout; with a writer it reads whole")
    func fifo() throws {
        let dir = try TempDir()
        let fifo = dir.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let start = Date()
        do {
            _ = try FileSources.makeSource(path: fifo, writerTimeout: .milliseconds(300))
            Issue.record("no error")
        } catch let error as BlobStreamError {
            #expect(
                error.code == .sourceFailed && error.message.contains("no writer") && error.message.contains(fifo),
                "\(error)")
        }
        let waited = Date().timeIntervalSince(start)
        #expect(waited >= 0.3 && waited < 3, "waited \(waited) s")
        // A writer that comes late, within the limit.
        let bytes = sampleBytes(300_000)
        let writer = Thread {
            Thread.sleep(forTimeInterval: 0.2) // the point: the writer comes late, within the limit
            let fd = open(fifo, O_WRONLY)
            if fd >= 0 {
                writeAll(fd, bytes)
                close(fd)
            }
        }
        writer.start()
        let source = try FileSources.makeSource(path: fifo, writerTimeout: .seconds(10))
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        let (data, last) = drain(stream)
        #expect(last == 0 && sha(data) == sha(bytes))
    }
}
