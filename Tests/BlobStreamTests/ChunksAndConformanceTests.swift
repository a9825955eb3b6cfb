import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("BlobChunks and the conformance check")
struct ChunksAndConformanceTests {
    @Test("chunks deliver every byte and end")
    func chunks() async throws {
        let bytes = sampleBytes(300_000)
        var out = Data()
        for try await chunk in BlobChunks(dataSource: InMemoryDataSource(data: bytes), chunkSize: 65_536) {
            #expect(chunk.count <= 65_536)
            out.append(chunk)
        }
        #expect(out == bytes)
    }

    @Test("chunks of a multiple of 64 bytes start on 64-byte boundaries (the kernel fills such memory at full speed)")
    func chunksAligned() async throws {
        let bytes = sampleBytes(5_000_000)
        var out = Data()
        var misaligned = 0
        for try await chunk in BlobChunks(dataSource: InMemoryDataSource(data: bytes), chunkSize: 65_536) {
            if chunk.withUnsafeBytes({ Int(bitPattern: $0.baseAddress) % 64 }) != 0 { misaligned += 1 }
            out.append(chunk)
        }
        #expect(misaligned == 0)
        #expect(out == bytes)
    }

    @Test("chunk buffers of the caller's type are filled in place: every byte, then an error as an error")
    func chunkBuffers() async throws {
        let bytes = sampleBytes(300_000)
        func arrays(_ source: InMemoryDataSource) -> BlobChunkBuffers<[UInt8]> {
            BlobChunkBuffers(stream: BlobInputStream(dataSource: source, mode: .synchronous), chunkSize: 65_536) {
                capacity, fill in
                [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                    count = fill(UnsafeMutableRawBufferPointer(buffer))
                }
            }
        }
        var out: [UInt8] = []
        for try await chunk in arrays(InMemoryDataSource(data: bytes, chunkSize: 50_000)) {
            #expect(!chunk.isEmpty && chunk.count <= 50_000)
            out += chunk
        }
        #expect(Data(out) == bytes)
        var got = 0
        do {
            for try await chunk in arrays(
                InMemoryDataSource(data: bytes, failAt: (123_456, SampleError(tag: "buffers"))))
            { got += chunk.count }
            Issue.record("the sequence ended cleanly")
        } catch let error as BlobStreamError {
            #expect(error.cause as? SampleError == SampleError(tag: "buffers"))
        }
        #expect(got == 123_456)
    }

    @Test("a source error is thrown as the stream's error")
    func chunkError() async {
        let source = InMemoryDataSource(data: sampleBytes(1000), failAt: (500, SampleError(tag: "chunks")))
        var got = 0
        do {
            for try await chunk in BlobChunks(dataSource: source) { got += chunk.count }
            Issue.record("the sequence ended cleanly")
        } catch let error as BlobStreamError {
            #expect(error.cause as? SampleError == SampleError(tag: "chunks"))
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(got == 500)
    }

    @Test(
        "cancelling the task wakes a read waiting for the source and throws CancellationError",
        .timeLimit(.minutes(1)))
    func cancellation() async {
        let queue = DispatchQueue(label: "slow")
        // 10 bytes, then nothing for an hour.
        let source = InMemoryDataSource(data: sampleBytes(100), chunkSize: 10, refillDelay: (queue, 3600))
        let (chunks, chunkSeen) = AsyncStream<Void>.makeStream()
        let task = Task {
            var got = 0
            for try await chunk in BlobChunks(dataSource: source) {
                got += chunk.count
                chunkSeen.yield()
            }
            return got
        }
        // Once the first 10 bytes came, the next read waits for the source (an hour).
        var seen = chunks.makeAsyncIterator()
        await seen.next()
        task.cancel()
        let result = await task.result
        switch result {
        case .failure(let error): #expect(error is CancellationError)
        case .success(let n): Issue.record("ended cleanly after \(n) bytes")
        }
    }

    @Test("the in-memory source passes the conformance check", arguments: [0, 1, 5000, 200_001])
    func inMemoryConforms(size: Int) {
        let bytes = sampleBytes(size)
        let findings = SourceConformance.check(
            expected: bytes,
            failing: { InMemoryDataSource(data: bytes, failAt: (size / 2, SampleError(tag: "c"))) }
        ) { InMemoryDataSource(data: bytes, chunkSize: 4000) }
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("an asynchronous source passes too")
    func asyncConforms() {
        let bytes = sampleBytes(50_000)
        let queue = DispatchQueue(label: "conformance-async")
        let findings = SourceConformance.check(expected: bytes) {
            InMemoryDataSource(
                data: bytes, open: .async(queue: queue, delay: 0.001), chunkSize: 7000, refillDelay: (queue, 0))
        }
        #expect(findings.isEmpty, "\(findings)")
    }

    /// A source that breaks the contract: it ends cleanly one byte short and never
    /// announces its end.
    final class BrokenSource: BlobDataSource, @unchecked Sendable {
        let state = BlobDataSourceState()
        let bytes: Data
        var position = 0
        init(_ bytes: Data) { self.bytes = bytes }
        var length: Int64? { Int64(bytes.count) }
        func open() {
            state.isOpenCompleted = true
            state.hasBytesAvailable = true
        }
        func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
            let n = min(maxLength, bytes.count - 1 - position)
            if n <= 0 { return 0 }
            bytes.withUnsafeBytes {
                buffer.update(from: $0.bindMemory(to: UInt8.self).baseAddress! + position, count: n)
            }
            position += n
            return n
        }
        func close() {}
    }

    @Test("the conformance check reports a broken source")
    func brokenSourceFound() {
        let bytes = sampleBytes(1000)
        let findings = SourceConformance.check(expected: bytes, timeout: 10) { BrokenSource(bytes) }
        #expect(findings.contains { $0.check == "read" && $0.message.contains("999 bytes instead of 1000") })
        #expect(findings.contains { $0.check == "read" && $0.message.contains("isAtEnd is false") })
        #expect(throws: SourceConformance.Failure.self) {
            try SourceConformance.verify(expected: bytes, timeout: 10) { BrokenSource(bytes) }
        }
    }
}
