import BlobStream
import BlobStreamFiles
import Foundation
import Glibc
import Testing

/// Offsets past 4 GiB, on a sparse file of 5 GiB (no disk blocks but the markers).
@Suite("Files past 4 GiB")
struct LargeFileTests {
    static let gib: Int64 = 1 << 30
    static let length = 5 * gib
    static let markerOffset = 4 * gib + gib / 2
    static let marker = Data("BLOBSTREAM-4.5GiB-MARKER".utf8)
    static let tail = Data("END!".utf8)

    /// Makes the sparse file (like `truncate -s 5G`) with a marker at 4.5 GiB and the last
    /// four bytes set.
    func makeSparseFile(in dir: TempDir) throws -> String {
        let path = dir.path("sparse-5g.bin")
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: UInt64(Self.length))
        try handle.seek(toOffset: UInt64(Self.markerOffset))
        try handle.write(contentsOf: Self.marker)
        try handle.seek(toOffset: UInt64(Self.length) - 4)
        try handle.write(contentsOf: Self.tail)
        try handle.close()
        return path
    }

    func read(_ stream: InputStream, _ count: Int) -> Data {
        var buffer = [UInt8](repeating: 0xFF, count: count)
        var out = Data()
        while out.count < count {
            let n = stream.read(&buffer, maxLength: count - out.count)
            if n <= 0 { break }
            out.append(buffer, count: n)
        }
        return out
    }

    @Test("a 5 GiB sparse file: length, and reads at offsets past 4 GiB")
    func sparseFile() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let path = try makeSparseFile(in: dir)
        let expected = Data(repeating: 0, count: 8) + Self.marker + Data(repeating: 0, count: 8)

        // Offset set before open.
        let source = FileDataSource(path: path)
        let stream = BlobInputStream(dataSource: source)
        #expect(stream.setProperty(NSNumber(value: Self.markerOffset - 8), forKey: .fileCurrentOffsetKey))
        stream.open()
        #expect(source.length == Self.length)
        #expect(read(stream, expected.count) == expected)
        let position = (stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.int64Value
        #expect(position == Self.markerOffset + Int64(Self.marker.count) + 8)

        // Moved after open, to the last bytes: the read that returns them ends the stream.
        #expect(stream.setProperty(NSNumber(value: Self.length - 4), forKey: .fileCurrentOffsetKey))
        #expect(read(stream, 10) == Self.tail)
        #expect(stream.streamStatus == .atEnd)
        #expect(!stream.setProperty(NSNumber(value: Self.length + 1), forKey: .fileCurrentOffsetKey))
        #expect(stream.setProperty(NSNumber(value: Self.markerOffset), forKey: .fileCurrentOffsetKey))
        #expect(read(stream, Self.marker.count) == Self.marker)
        stream.close()

        // The same through a file handle.
        let handle = try #require(FileHandle(forReadingAtPath: path))
        let handleSource = FileHandleDataSource(fileHandle: handle, closeOnClose: true)
        let handleStream = BlobInputStream(dataSource: handleSource)
        #expect(handleStream.setProperty(NSNumber(value: Self.markerOffset), forKey: .fileCurrentOffsetKey))
        handleStream.open()
        #expect(handleSource.length == Self.length)
        #expect(read(handleStream, Self.marker.count) == Self.marker)
        handleStream.close()
    }
}
