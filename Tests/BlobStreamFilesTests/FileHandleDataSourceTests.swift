import BlobStream
import BlobStreamFiles
import BlobStreamTestSupport
import Crypto
import Foundation
import Glibc
import Testing

@Suite("FileHandleDataSource")
struct FileHandleDataSourceTests {
    @Test("a regular file: offset 0 is the start of the file; the handle's offset is left alone")
    func regularFile() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(200_000)
        let path = try dir.file("regular.bin", bytes)
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: 1234)
        let source = FileHandleDataSource(fileHandle: handle)
        #expect(source.offsetCapability == .seek)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        #expect(source.length == Int64(bytes.count))
        let (data, last) = drain(stream, size: 30_000)
        #expect(last == 0)
        #expect(sha(data) == sha(bytes))
        #expect(try handle.offset() == 1234)
        stream.close()
        // Not closed unless asked: the descriptor is still open and reads.
        #expect(fcntl(handle.fileDescriptor, F_GETFD) >= 0)
        #expect(try handle.read(upToCount: 4) == bytes.subdata(in: 1234..<1238))
    }

    @Test("closeOnClose: true closes the handle with the source")
    func closeOnClose() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let path = try dir.file("owned.bin", sampleBytes(10))
        let handle = try #require(FileHandle(forReadingAtPath: path))
        let source = FileHandleDataSource(fileHandle: handle, closeOnClose: true)
        source.open()
        #expect(drainSource(source).0 == sampleBytes(10))
        source.close()
        #expect(handle.fileDescriptor == -1, "FileHandle marks itself closed")
    }

    @Test("a regular file truncated while read through a handle fails naming it")
    func truncatedThroughHandle() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let path = try dir.file("shrinking.bin", sampleBytes(500_000))
        let handle = try #require(FileHandle(forReadingAtPath: path))
        let source = FileHandleDataSource(fileHandle: handle, closeOnClose: true)
        source.open()
        var buffer = [UInt8](repeating: 0, count: 1000)
        #expect(source.read(&buffer, maxLength: 1000) == 1000)
        #expect(truncate(path, 500) == 0)
        let (_, last) = drainSource(source)
        #expect(last == -1)
        let error = try #require(sourceError(source))
        #expect(error.code == .changed)
        #expect(error.message.contains(path) && error.message.contains("offset 1000"), "\(error)")
        source.close()
    }

    @Test("a pipe: sequential reads, length unknown, an offset before open reads and discards")
    func pipeWithOffsetBeforeOpen() throws {
        let bytes = sampleBytes(700_001)
        let pipe = Pipe()
        let source = FileHandleDataSource(fileHandle: pipe.fileHandleForReading, closeOnClose: true)
        #expect(source.offsetCapability == .readAndDiscard)
        let writer = startWriter(pipe.fileHandleForWriting, bytes)
        let stream = BlobInputStream(dataSource: source)
        #expect(stream.setProperty(NSNumber(value: 100_000), forKey: .fileCurrentOffsetKey))
        stream.open()
        #expect(source.length == nil)
        let (data, last) = drain(stream, size: 65_536)
        #expect(last == 0)
        #expect(sha(data) == sha(bytes.subdata(in: 100_000..<bytes.count)))
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == bytes.count)
        stream.close()
        writer.wait()
    }

    @Test("a pipe: forward moves after open are read and discarded, backward moves refused")
    func pipeMovesForwardOnly() throws {
        let bytes = sampleBytes(300_000)
        let pipe = Pipe()
        let source = FileHandleDataSource(fileHandle: pipe.fileHandleForReading, closeOnClose: true)
        let writer = startWriter(pipe.fileHandleForWriting, bytes)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 100)
        var head = 0
        while head < 100 {
            let n = stream.read(&buffer, maxLength: 100 - head)
            #expect(n > 0)
            if n <= 0 { break }
            head += n
        }
        #expect(!stream.setProperty(NSNumber(value: 50), forKey: .fileCurrentOffsetKey), "backward after reading")
        #expect(stream.setProperty(NSNumber(value: 200_000), forKey: .fileCurrentOffsetKey))
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == 200_000)
        // Back again, but not before what was read: nothing was discarded yet.
        #expect(stream.setProperty(NSNumber(value: 150_000), forKey: .fileCurrentOffsetKey))
        let (data, last) = drain(stream)
        #expect(last == 0)
        #expect(sha(data) == sha(bytes.subdata(in: 150_000..<bytes.count)))
        #expect(!stream.setProperty(NSNumber(value: 300_001), forKey: .fileCurrentOffsetKey), "past a known end")
        stream.close()
        writer.wait()
    }

    @Test("a pipe: an offset past its end is an error at the read that finds the end, naming the offset")
    func pipeOffsetPastEnd() throws {
        let pipe = Pipe()
        let source = FileHandleDataSource(fileHandle: pipe.fileHandleForReading, closeOnClose: true)
        let writer = startWriter(pipe.fileHandleForWriting, sampleBytes(1000))
        let stream = BlobInputStream(dataSource: source)
        #expect(stream.setProperty(NSNumber(value: 5000), forKey: .fileCurrentOffsetKey))
        stream.open()
        #expect(stream.streamStatus == .open)
        let (data, last) = drain(stream)
        #expect(data.isEmpty)
        #expect(last == -1)
        let error = try #require(sourceError(source))
        #expect(error.code == .invalidOffset)
        #expect(error.message.contains("5000") && error.message.contains("1000"), "\(error)")
        #expect(error.message.contains("pipe"), "names the descriptor: \(error)")
        stream.close()
        writer.wait()
    }

    @Test("a pipe whose writer closes at once ends cleanly")
    func emptyPipe() throws {
        let pipe = Pipe()
        let source = FileHandleDataSource(fileHandle: pipe.fileHandleForReading, closeOnClose: true)
        try pipe.fileHandleForWriting.close()
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == 0)
        #expect(stream.streamStatus == .atEnd)
        #expect(source.isAtEnd)
        stream.close()
    }

    @Test("closing the stream from another thread ends a read blocked on a silent pipe: -1, .closed")
    func closeWakesBlockedRead() throws {
        let pipe = Pipe() // the writer stays open and silent
        let source = FileHandleDataSource(fileHandle: pipe.fileHandleForReading)
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        let first = Data("first bytes".utf8)
        writeAll(pipe.fileHandleForWriting.fileDescriptor, first)
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(stream.read(&buffer, maxLength: 64) == first.count)
        // A responsiveness check, not a benchmark: without the interruption it never returns.
        let outcome = stream.closeWhileReading()
        #expect(outcome.blocked, "the read did not block")
        #expect(outcome.result == -1, "close() did not end the blocked read: \(String(describing: outcome.result))")
        #expect(sourceError(source)?.code == .closed, "\(String(describing: sourceError(source)))")
        #expect(sourceError(source)?.message.contains("was closed while a read waited") == true)
        try pipe.fileHandleForWriting.close()
        try pipe.fileHandleForReading.close()
    }

    @Test("a pipe in asynchronous mode, with an offset")
    func pipeAsynchronous() throws {
        let bytes = sampleBytes(400_000)
        let pipe = Pipe()
        let source = FileHandleDataSource(fileHandle: pipe.fileHandleForReading, closeOnClose: true)
        let writer = startWriter(pipe.fileHandleForWriting, bytes, delay: 0.05)
        let result = AsynchronousRead(reading: source, offset: 12_345)
        #expect(result.finished)
        #expect(result.error == nil)
        #expect(sha(result.data) == sha(bytes.subdata(in: 12_345..<bytes.count)))
        #expect(result.events.first == "open")
        #expect(result.events.last == "end")
        writer.wait()
    }

    @Test("a non-blocking pipe is waited on, not failed with EAGAIN")
    func nonBlockingPipe() throws {
        let bytes = sampleBytes(100_000)
        let pipe = Pipe()
        let fd = pipe.fileHandleForReading.fileDescriptor
        #expect(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0)
        let source = FileHandleDataSource(fileHandle: pipe.fileHandleForReading, closeOnClose: true)
        let writer = startWriter(pipe.fileHandleForWriting, bytes, delay: 0.2)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let (data, last) = drain(stream, size: 4096)
        #expect(last == 0, "\(String(describing: stream.streamError))")
        #expect(sha(data) == sha(bytes))
        stream.close()
        writer.wait()
    }

    @Test("a FIFO (mkfifo) with a writer thread, from an offset")
    func fifo() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let path = dir.path("fifo")
        #expect(mkfifo(path, 0o600) == 0)
        let bytes = sampleBytes(333_333)
        ignoreSIGPIPE()
        let done = DispatchSemaphore(value: 0)
        Thread {
            // Opening for writing waits for the reader, as the reader's open waits for us.
            if let writer = FileHandle(forWritingAtPath: path) {
                writeAll(writer.fileDescriptor, bytes)
                try? writer.close()
            }
            done.signal()
        }.start()
        let handle = try #require(FileHandle(forReadingAtPath: path))
        let source = FileHandleDataSource(fileHandle: handle, closeOnClose: true)
        #expect(source.offsetCapability == .readAndDiscard)
        let stream = BlobInputStream(dataSource: source)
        #expect(stream.setProperty(NSNumber(value: 777), forKey: .fileCurrentOffsetKey))
        stream.open()
        let (data, last) = drain(stream, size: 10_000)
        #expect(last == 0)
        #expect(sha(data) == sha(bytes.subdata(in: 777..<bytes.count)))
        stream.close()
        done.wait()
    }

    @Test("a directory handle is refused at open, naming the directory")
    func directoryHandle() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let handle = try #require(FileHandle(forReadingAtPath: dir.path))
        let source = FileHandleDataSource(fileHandle: handle, closeOnClose: true)
        #expect(source.offsetCapability == .none)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        #expect(stream.streamStatus == .error)
        let error = try #require(sourceError(source))
        #expect(error.code == .unsupported)
        #expect(error.message.contains(dir.path) && error.message.contains("directory"), "\(error)")
        stream.close()
    }

    @Test("a character device (/dev/zero) reads sequentially, with an offset")
    func characterDevice() throws {
        let handle = try #require(FileHandle(forReadingAtPath: "/dev/zero"))
        let source = FileHandleDataSource(fileHandle: handle, closeOnClose: true)
        #expect(source.offsetCapability == .readAndDiscard)
        #expect(source.setProperty(NSNumber(value: 1 << 20), forKey: .fileCurrentOffsetKey))
        source.open()
        #expect(source.length == nil)
        var buffer = [UInt8](repeating: 1, count: 4096)
        #expect(source.read(&buffer, maxLength: 4096) == 4096)
        #expect(buffer.allSatisfy { $0 == 0 })
        #expect((source.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == (1 << 20) + 4096)
        source.close()
    }
}
