import BlobStream
import BlobStreamFiles
import BlobStreamTestSupport
import Foundation
import Glibc
import Testing

/// `FileDataSource` as a `BlobStoredRegionProviding`: the rest of the file it reads, in its
/// own descriptor, for a consumer that moves the bytes without reading them.
@Suite("A file's stored region")
struct StoredRegionTests {
    @Test("none before open; the rest of the file from an offset; none at the end, after close")
    func regions() throws {
        let dir = try TempDir()
        let data = sampleBytes(300_000, seed: 41)
        let path = dir.path + "/f.bin"
        try data.write(to: URL(fileURLWithPath: path))
        let source = FileDataSource(path: path)
        #expect(source.storedRegion == nil)
        try source.seek(to: 1000)
        source.open()
        let first = try #require(source.storedRegion)
        #expect(first.fileOffset == 1000 && first.count == 299_000)
        #expect(sha(first.bytesInFile()) == sha(data.dropFirst(1000)))
        // A consumer that moved 5,000 of them moves the source past them.
        try source.seek(to: 6000)
        let second = try #require(source.storedRegion)
        #expect(second.descriptor == first.descriptor && second.fileOffset == 6000 && second.count == 294_000)
        #expect(sha(drainSource(source).0) == sha(data.dropFirst(6000)))
        #expect(source.storedRegion == nil)
        source.close()
        #expect(source.storedRegion == nil)
    }

    @Test("another file put at the path after open: the region is still the file opened")
    func replaced() throws {
        let dir = try TempDir()
        let data = sampleBytes(70_000, seed: 42)
        let path = dir.path + "/f.bin"
        try data.write(to: URL(fileURLWithPath: path))
        let source = FileDataSource(path: path)
        source.open()
        defer { source.close() }
        try sampleBytes(70_000, seed: 43).write(to: URL(fileURLWithPath: dir.path + "/other.bin"))
        #expect(rename(dir.path + "/other.bin", path) == 0)
        let region = try #require(source.storedRegion)
        #expect(sha(region.bytesInFile()) == sha(data))
    }

    @Test("a file that failed to open, or is empty: no region")
    func none() throws {
        let dir = try TempDir()
        let missing = FileDataSource(path: dir.path + "/missing")
        missing.open()
        #expect((missing.state.error as? BlobStreamError)?.code == .notFound)
        #expect(missing.storedRegion == nil)
        try Data().write(to: URL(fileURLWithPath: dir.path + "/empty"))
        let empty = FileDataSource(path: dir.path + "/empty")
        empty.open()
        defer { empty.close() }
        #expect(empty.storedRegion == nil)
    }
}
