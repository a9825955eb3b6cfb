import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("Chunk sequences from a source, a stream and a registry URL")
struct ChunkEntryPointTests {
    static func collect(_ chunks: BlobChunks) async throws -> (Data, [Int]) {
        var data = Data()
        var sizes: [Int] = []
        for try await chunk in chunks {
            data.append(chunk)
            sizes.append(chunk.count)
        }
        return (data, sizes)
    }

    @Test("source.chunks(size:), stream.chunks(size:), registry.chunks(url:) deliver every byte in order")
    func everyEntryPoint() async throws {
        let bytes = sampleBytes(300_001)
        let queue = DispatchQueue(label: "ChunkEntryPointTests")

        let (a, sizesA) = try await Self.collect(InMemoryDataSource(data: bytes).chunks(size: 100_000))
        #expect(a == bytes)
        #expect(sizesA.allSatisfy { $0 > 0 && $0 <= 100_000 })
        #expect(sizesA.count == 4)

        let stream = BlobInputStream(
            dataSource: InMemoryDataSource(data: bytes, open: .async(queue: queue, delay: 0.02)), mode: .asynchronous)
        let (b, _) = try await Self.collect(stream.chunks(size: 4096))
        #expect(b == bytes)
        #expect(stream.streamStatus == .closed)

        let registry = DataSourceRegistry()
        registry.register(scheme: "mem") { _, _ in InMemoryDataSource(data: bytes, chunkSize: 777) }
        let (c, _) = try await Self.collect(try registry.chunks(url: URL(string: "mem:a%20b!/c")!))
        #expect(c == bytes)
        let (d, _) = try await Self.collect(try registry.chunks(url: "mem:x", size: 333))
        #expect(d.count == bytes.count)
    }

    @Test("a source failing at byte N: the bytes before it, then the stream's error with the source's as cause")
    func failure() async throws {
        let bytes = sampleBytes(50_000)
        let source = InMemoryDataSource(data: bytes, failAt: (offset: 20_000, error: SampleError(tag: "mid")))
        var got = Data()
        do {
            for try await chunk in source.chunks(size: 8192) { got.append(chunk) }
            Issue.record("the sequence ended cleanly")
        } catch let error as BlobStreamError {
            #expect((error.cause as? SampleError)?.tag == "mid")
        }
        #expect(got == bytes.prefix(20_000))
    }

    @Test("registry.chunks(url:) throws the registry's error for an unknown scheme, naming the URL")
    func unknownScheme() throws {
        let error = #expect(throws: BlobStreamError.self) {
            _ = try DataSourceRegistry().chunks(url: URL(string: "nope:file:///x")!)
        }
        #expect(error?.code == .unknownScheme)
        #expect(error?.message.contains("nope:file:///x") == true)
    }
}
