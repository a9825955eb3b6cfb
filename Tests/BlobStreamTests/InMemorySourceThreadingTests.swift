import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

/// `InMemoryDataSource` is used from several threads at once: its owner reads and closes,
/// its queue announces refills and asynchronous opens. Under `make tsan` these tests fail
/// on any unguarded access between the two sides.
@Suite("InMemoryDataSource across threads")
struct InMemorySourceThreadingTests {
    @Test("close() on the owner's thread while refills are announced from the queue")
    func closeWhileRefilling() {
        let bytes = sampleBytes(4_000)
        let queue = DispatchQueue(label: "refill")
        for round in 0..<200 {
            let source = InMemoryDataSource(data: bytes, chunkSize: 1_000, refillDelay: (queue, 0))
            source.open()
            var buffer = [UInt8](repeating: 0, count: 1_000)
            // The read drops hasBytesAvailable and queues its announcement; close() meets it.
            let n = source.read(&buffer, maxLength: 1_000)
            #expect(n == 1_000)
            #expect(Data(buffer) == bytes.prefix(1_000))
            source.close()
            #expect(source.read(&buffer, maxLength: 1_000) == -1, "a read after close fails (round \(round))")
            queue.sync {} // the announcement ran (or saw the source closed)
            #expect(source.readCount == 2)
        }
    }

    @Test("reads and offsets on the owner's thread while the queue announces; bytes stay exact")
    func readsWhileAnnouncing() {
        let bytes = sampleBytes(50_000)
        let queue = DispatchQueue(label: "refill")
        let source = InMemoryDataSource(
            data: bytes, open: .async(queue: queue, delay: 0), chunkSize: 700, refillDelay: (queue, 0))
        let stream = BlobInputStream(dataSource: source) // synchronous: waits for each announcement
        stream.open()
        let (data, last) = stream.readToEnd(chunkSize: 1_000)
        #expect(last == 0)
        #expect(digest(data) == digest(bytes))
        // Back to the middle: the source's offset moves on the owner's thread.
        #expect(stream.setProperty(NSNumber(value: 25_000), forKey: .fileCurrentOffsetKey))
        let (rest, end) = stream.readToEnd(chunkSize: 1_000)
        #expect(end == 0)
        #expect(digest(rest) == digest(bytes.suffix(25_000)))
        stream.close()
        queue.sync {}
    }
}
