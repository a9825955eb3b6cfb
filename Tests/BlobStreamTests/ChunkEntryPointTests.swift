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

    @Test("chunks cut from shared blocks: each at most the size, indexed from 0, valid after later blocks are read")
    func chunksKeptAcrossBlocks() async throws {
        // 5 MiB in 1000-byte chunks: blocks of 2,097,000 bytes, so chunks come from three
        // blocks, and the memory of released blocks is used again.
        let bytes = sampleBytes(5 << 20)
        var kept: [Data] = []
        var index = 0
        for try await chunk in InMemoryDataSource(data: bytes).chunks(size: 1000) {
            #expect(chunk.count > 0 && chunk.count <= 1000)
            #expect(chunk.startIndex == 0)
            #expect(chunk.first == bytes[index])
            index += chunk.count
            if kept.count < 3000 { kept.append(chunk) } // held across a block boundary
        }
        #expect(index == bytes.count)
        #expect(kept.reduce(into: Data()) { $0.append($1) } == bytes.prefix(kept.count * 1000))

        // Released as read: the blocks go back to the pool and are read into again.
        var again = Data()
        for try await chunk in InMemoryDataSource(data: bytes).chunks(size: 65_536) { again.append(chunk) }
        #expect(again == bytes)
    }
}
