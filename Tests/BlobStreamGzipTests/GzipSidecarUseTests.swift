import BlobStream
import BlobStreamFiles
import BlobStreamGzip
import Foundation
import SharedTestHelpers
import Testing

/// `GzipSources` uses a matching `FILE.gz.gzidx` beside a `file:` URL without being asked:
/// the source reads through it (in parallel where the machine has the cores), with the
/// same bytes; a stale or foreign sidecar, or `usesSidecarIndex: false`, is not used.
@Suite("Gzip sidecar indexes used by the gzip: scheme")
struct GzipSidecarUseTests {
    /// A registry with `file:` and `gzip:` (sidecars looked for, unless told otherwise).
    static func registry(usesSidecarIndex: Bool = true) -> DataSourceRegistry {
        let registry = DataSourceRegistry()
        FileSources.register(in: registry)
        GzipSources.register(in: registry, usesSidecarIndex: usesSidecarIndex)
        return registry
    }

    /// Reads `url` whole: the bytes and how the source decoded.
    static func read(_ url: String, _ registry: DataSourceRegistry) throws -> (Data, GzipDecoding) {
        let source = try #require(try registry.makeSource(url: url) as? GzipDataSource)
        let decoding = source.decoding
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        let (data, last) = stream.readToEnd(chunkSize: 100_000)
        #expect(last == 0, "\(String(describing: stream.streamError))")
        stream.close()
        return (data, decoding)
    }

    @Test("a matching sidecar is used (every chunk checked, on all cores); the bytes are the file's")
    func matching() throws {
        let multi = try MultiMember.shared.get()
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", multi.gz)
        let url = BlobURL.fileURL(path: path)

        let (without, plainDecoding) = try Self.read("gzip:" + url, Self.registry())
        #expect(sha256(without) == sha256(multi.plain))
        #expect(plainDecoding == GzipDecoding(usesIndex: false, threads: 1))

        try GzipIndex.build(fileAtPath: path, spacing: 512 * 1024).write(
            toPath: GzipIndex.sidecar(of: path))
        let (with, decoding) = try Self.read("gzip:" + url, Self.registry())
        #expect(sha256(with) == sha256(multi.plain))
        #expect(decoding == GzipDecoding(usesIndex: true, threads: GzipDataSource.defaultParallelism))
        #expect(decoding.description.hasPrefix("read through a seek-point index, decoded on"))

        let (off, offDecoding) = try Self.read("gzip:" + url, Self.registry(usesSidecarIndex: false))
        #expect(sha256(off) == sha256(multi.plain))
        #expect(!offDecoding.usesIndex)
    }

    @Test("a stale sidecar (the file replaced) and a foreign one (no BlobStream record) are not used")
    func staleOrForeign() throws {
        let folder = try IndexTestFolder()
        let first = try Gzip.compress(textBytes(2_000_000, seed: 31))
        let path = try folder.write("s.gz", first)
        let sidecar = GzipIndex.sidecar(of: path)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 256 * 1024)
        try index.write(toPath: sidecar)

        let second = textBytes(2_100_000, seed: 32)
        _ = try folder.write("s.gz", try Gzip.compress(second))
        let (bytes, decoding) = try Self.read("gzip:" + BlobURL.fileURL(path: path), Self.registry())
        #expect(sha256(bytes) == sha256(second))
        #expect(!decoding.usesIndex)

        // The index of the new file without BlobStream's record (as indexed_gzip writes it).
        let fresh = try GzipIndex.build(fileAtPath: path, spacing: 256 * 1024)
        var foreign = fresh
        foreign.identity = nil
        foreign.points = fresh.points.map {
            var point = $0
            point.chunkCRC32 = nil
            return point
        }
        try Data(foreign.serialized()).write(to: URL(fileURLWithPath: sidecar))
        let (again, foreignDecoding) = try Self.read("gzip:" + BlobURL.fileURL(path: path), Self.registry())
        #expect(sha256(again) == sha256(second))
        #expect(!foreignDecoding.usesIndex)
    }
}
