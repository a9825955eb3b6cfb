import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@testable import BlobStreamFiles

/// The file sources through the typed offset API only (`seek(to:)`, `readOffset`); the
/// `.fileCurrentOffsetKey` form is covered by FileDataSourceTests ("reading from an offset",
/// "an offset past the length is refused…", "read, property and setProperty before open and
/// after close") and FileHandleDataSourceTests (the pipe, FIFO and device offset tests).
@Suite("Typed offsets of the file sources")
struct FileTypedOffsetTests {
    static let bytes = sampleBytes(800)

    /// Reads `count` bytes from `source` directly, in reads of at most 100.
    static func take(_ count: Int, from source: any BlobDataSource) -> Data {
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 100)
        while out.count < count {
            let n = source.read(&buffer, maxLength: min(100, count - out.count))
            if n <= 0 { break }
            out.append(buffer, count: n)
        }
        return out
    }

    /// The same checks for a file read by path and through a handle: before open, after
    /// open (back and forth), past the end (named, nothing changes), after close.
    @Test("a regular file: seek before open, after open, past the end, after close", arguments: [false, true])
    func regularFile(throughHandle: Bool) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let path = try dir.file("typed.bin", Self.bytes)
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { if !throughHandle { try? handle.close() } }
        let source: any BlobDataSource =
            throughHandle
            ? FileHandleDataSource(fileHandle: handle, closeOnClose: true) : FileDataSource(path: path)
        let name = throughHandle ? "fd \(handle.fileDescriptor) ('\(path)')" : "'\(path)'"

        #expect(source.readOffset == 0)
        try source.seek(to: 300)
        #expect(source.readOffset == 300)
        source.open()
        #expect(source.error == nil)
        #expect(source.readOffset == 300)
        #expect(Self.take(200, from: source) == Self.bytes.subdata(in: 300..<500))
        #expect(source.readOffset == 500)

        try source.seek(to: 100) // back, after open
        #expect(source.readOffset == 100)
        #expect(Self.take(50, from: source) == Self.bytes.subdata(in: 100..<150))
        #expect(source.readOffset == 150)

        let pastEnd = #expect(throws: BlobStreamError.self) { try source.seek(to: 900) }
        #expect(pastEnd?.code == .invalidOffset)
        #expect(pastEnd?.message == "offset 900 is past the end of \(name) (800 bytes)")
        #expect(source.readOffset == 150, "a refused move changes nothing")
        #expect(source.error == nil, "a refused move is not a failure of the source")
        let negative = #expect(throws: BlobStreamError.self) { try source.seek(to: -1) }
        #expect(negative?.code == .invalidOffset)
        #expect(negative?.message.contains(name) == true && negative?.message.contains("-1") == true)

        try source.seek(to: 800) // the end itself
        #expect(source.state.isAtEnd)
        var byte: UInt8 = 0
        #expect(source.read(&byte, maxLength: 1) == 0)
        try source.seek(to: 790) // off the end again
        #expect(!source.state.isAtEnd && source.state.hasBytesAvailable)
        let (tail, last) = drainSource(source)
        #expect(last == 0 && tail == Self.bytes.subdata(in: 790..<800))
        #expect(source.readOffset == 800)

        source.close()
        #expect(source.readOffset == nil)
        let closed = #expect(throws: BlobStreamError.self) { try source.seek(to: 0) }
        #expect(closed?.code == .closed)
        #expect(closed?.message.contains(name) == true, "\(String(describing: closed))")
    }

    @Test("an offset past the end set before open fails the open, naming the path, offset and length")
    func pastEndBeforeOpen() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let path = try dir.file("short.bin", Self.bytes)
        let source = FileDataSource(path: path)
        try source.seek(to: 900) // the length is not known yet
        source.open()
        let error = try #require(sourceError(source))
        #expect(error.code == .invalidOffset)
        #expect(error.message == "offset 900 is past the end of '\(path)' (800 bytes)")
        #expect(source.readOffset == nil)
        let afterFailure = #expect(throws: BlobStreamError.self) { try source.seek(to: 0) }
        #expect(afterFailure?.code == .invalidOffset)
        #expect(afterFailure?.message.contains(path) == true)
        #expect((afterFailure?.cause as? BlobStreamError)?.message == error.message, "the failure is the cause")
    }

    @Test("a pipe: forward after open is read and discarded, back before the bytes read is refused naming it")
    func pipe() throws {
        let bytes = sampleBytes(300_000)
        let pipe = Pipe()
        let source = FileHandleDataSource(fileHandle: pipe.fileHandleForReading, closeOnClose: true)
        let writer = startWriter(pipe.fileHandleForWriting, bytes)
        #expect(source.offsetCapability == .readAndDiscard)
        try source.seek(to: 1000)
        #expect(source.readOffset == 1000)
        source.open()
        #expect(Self.take(100, from: source) == bytes.subdata(in: 1000..<1100))
        #expect(source.readOffset == 1100)

        let back = #expect(throws: BlobStreamError.self) { try source.seek(to: 50) }
        #expect(back?.code == .invalidOffset)
        #expect(
            back?.message.contains("offset 50") == true && back?.message.contains("pipe") == true,
            "\(String(describing: back))")
        #expect(source.readOffset == 1100, "a refused move changes nothing")

        try source.seek(to: 200_000)
        #expect(source.readOffset == 200_000)
        let (data, last) = drainSource(source)
        #expect(last == 0)
        #expect(sha(data) == sha(bytes.subdata(in: 200_000..<bytes.count)))
        #expect(source.readOffset == 300_000)
        let pastEnd = #expect(throws: BlobStreamError.self) { try source.seek(to: 300_001) }
        #expect(pastEnd?.code == .invalidOffset)
        #expect(pastEnd?.message.contains("300001") == true && pastEnd?.message.contains("300000") == true)
        source.close()
        writer.wait()
    }

    @Test("a directory handle cannot move at all: .offsetUnsupported naming it")
    func directory() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let handle = try #require(FileHandle(forReadingAtPath: dir.path))
        let source = FileHandleDataSource(fileHandle: handle, closeOnClose: true)
        let error = #expect(throws: BlobStreamError.self) { try source.seek(to: 10) }
        #expect(error?.code == .offsetUnsupported)
        #expect(error?.message.contains(dir.path) == true && error?.message.contains("10") == true)
        #expect((error?.cause as? BlobStreamError)?.code == .unsupported)
        source.close()
    }

    @Test("the stream's seek(to:) and readOffset over a file, and the key agreeing with them")
    func throughStream() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let path = try dir.file("stream.bin", Self.bytes)
        let stream = BlobInputStream(dataSource: FileDataSource(path: path))
        try stream.seek(to: 700)
        stream.open()
        try stream.seek(to: 650)
        #expect(stream.readOffset == 650)
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.int64Value == 650)
        let (data, last) = drain(stream)
        #expect(last == 0 && data == Self.bytes.subdata(in: 650..<800))
        let error = #expect(throws: BlobStreamError.self) { try stream.seek(to: 801) }
        #expect(error?.code == .invalidOffset)
        stream.close()
    }
}
