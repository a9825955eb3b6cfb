import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("BlobInputStream, synchronous mode")
struct SynchronousStreamTests {
    let bytes = sampleBytes(200_003)

    @Test("open completes before open() returns, even when the source opens on a queue")
    func openWaits() {
        let queue = DispatchQueue(label: "open-later")
        let source = InMemoryDataSource(data: bytes, open: .async(queue: queue, delay: 0.05))
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        #expect(stream.streamStatus == .notOpen)
        stream.open()
        #expect(stream.streamStatus == .open)
        #expect(source.isOpenCompleted)
    }

    @Test("reads every byte", arguments: [1, 7, 4096, 65_536, 10_000_000])
    func readsEverything(readSize: Int) {
        let stream = BlobInputStream(dataSource: InMemoryDataSource(data: bytes, chunkSize: 50_000))
        stream.open()
        let (data, last) = drain(stream, size: readSize)
        #expect(last == 0)
        #expect(digest(data) == digest(bytes))
        #expect(data.count == bytes.count)
        #expect(stream.streamStatus == .atEnd)
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == 0, "a read after the end returns 0")
        stream.close()
        #expect(stream.read(&byte, maxLength: 1) == -1, "a read after close returns -1")
        #expect(stream.streamStatus == .closed)
    }

    @Test("close before open leaves notOpen; a closed stream never reopens; open twice is a no-op")
    func lifecycle() {
        let a = BlobInputStream(dataSource: InMemoryDataSource(data: bytes))
        a.close()
        #expect(a.streamStatus == .notOpen)

        let source = InMemoryDataSource(data: bytes)
        let b = BlobInputStream(dataSource: source)
        b.open()
        var buffer = [UInt8](repeating: 0, count: 10)
        #expect(b.read(&buffer, maxLength: 10) == 10)
        b.open() // URLSession on Linux opens twice
        #expect(b.streamStatus == .open)
        #expect((b.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == 10, "second open did not restart")
        b.close()
        b.open()
        #expect(b.streamStatus == .closed)
        #expect(b.read(&buffer, maxLength: 10) == -1)
    }

    @Test("read before open returns -1")
    func readBeforeOpen() {
        let stream = BlobInputStream(dataSource: InMemoryDataSource(data: bytes))
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == -1)
        #expect(stream.streamStatus == .notOpen)
    }

    @Test("waits for bytes that arrive later on another queue")
    func waitsForBytes() {
        let queue = DispatchQueue(label: "refill")
        let source = InMemoryDataSource(
            data: bytes, open: .async(queue: queue, delay: 0.01), chunkSize: 40_000,
            refillDelay: (queue, 0.002))
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let (data, last) = drain(stream, size: 65_536)
        #expect(last == 0)
        #expect(digest(data) == digest(bytes))
    }

    @Test("an empty source: open then end, no error")
    func emptySource() {
        let stream = BlobInputStream(dataSource: InMemoryDataSource(data: Data()))
        stream.open()
        #expect(stream.streamStatus == .atEnd)
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == 0)
        #expect(stream.streamError == nil)
    }

    @Test("a source failing at open: status error, the cause is the source's error")
    func failingOpen() throws {
        let stream = BlobInputStream(dataSource: InMemoryDataSource(data: bytes, failAtOpen: SampleError(tag: "open")))
        stream.open()
        #expect(stream.streamStatus == .error)
        let error = try #require(stream.streamError as? BlobStreamError)
        #expect(error.code == .sourceFailed)
        #expect(error.cause as? SampleError == SampleError(tag: "open"))
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == -1)
    }

    @Test("a source failing at byte N: exactly N bytes, then the error", arguments: [0, 1, 65_536, 199_999])
    func failingAtByte(offset: Int) throws {
        let source = InMemoryDataSource(
            data: bytes, failAt: (offset, SampleError(tag: "at \(offset)")), chunkSize: 30_000)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let (data, last) = drain(stream, size: 8192)
        #expect(last == -1)
        #expect(data == bytes.prefix(offset))
        #expect(stream.streamStatus == .error)
        let error = try #require(stream.streamError as? BlobStreamError)
        #expect(error.cause as? SampleError == SampleError(tag: "at \(offset)"))
        #expect(String(describing: error).contains("at \(offset)"))
    }

    @Test("offset before open starts there; after open it seeks")
    func offsets() {
        let before = BlobInputStream(dataSource: InMemoryDataSource(data: bytes))
        #expect(before.setProperty(NSNumber(value: 150_000), forKey: .fileCurrentOffsetKey))
        #expect((before.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == 150_000)
        before.open()
        let (tail, _) = drain(before, size: 4096)
        #expect(tail == bytes.suffix(from: 150_000))

        let after = BlobInputStream(dataSource: InMemoryDataSource(data: bytes))
        after.open()
        let (all, _) = drain(after, size: 65_536)
        #expect(all.count == bytes.count)
        #expect(after.setProperty(NSNumber(value: 3), forKey: .fileCurrentOffsetKey), "seeking back from the end")
        #expect(after.streamStatus == .open)
        let (again, last) = drain(after, size: 65_536)
        #expect(last == 0)
        #expect(again == bytes.suffix(from: 3))
    }

    @Test("negative, fractional, non-numeric and past-the-end offsets are refused")
    func refusedOffsets() {
        let stream = BlobInputStream(dataSource: InMemoryDataSource(data: bytes))
        #expect(!stream.setProperty(NSNumber(value: -1), forKey: .fileCurrentOffsetKey))
        #expect(!stream.setProperty(NSNumber(value: 1.5), forKey: .fileCurrentOffsetKey))
        #expect(!stream.setProperty("12" as NSString, forKey: .fileCurrentOffsetKey))
        #expect(!stream.setProperty(nil, forKey: .fileCurrentOffsetKey))
        #expect(!stream.setProperty(NSNumber(value: bytes.count + 1), forKey: .fileCurrentOffsetKey))
        #expect(stream.setProperty(NSNumber(value: bytes.count), forKey: .fileCurrentOffsetKey))
        stream.open()
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == 0, "offset == length is an immediate end")
    }

    @Test("a synchronous open on the source's own completion queue fails at once")
    func openDeadlockDetected() throws {
        let queue = DispatchQueue(label: "completes-here")
        let source = InMemoryDataSource(data: bytes, open: .async(queue: queue, delay: 0))
        let result = Box<(Stream.Status, BlobStreamError?)>((.notOpen, nil))
        let done = DispatchSemaphore(value: 0)
        queue.async {
            let stream = BlobInputStream(dataSource: source)
            stream.open()
            result.value = (stream.streamStatus, stream.streamError as? BlobStreamError)
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success, "the open on the completion queue hung")
        #expect(result.value.0 == .error)
        #expect(result.value.1?.code == .wouldDeadlock)
        #expect(result.value.1?.message.contains("queue") == true)
    }

    @Test("a synchronous read on the source's own completion queue fails at once")
    func readDeadlockDetected() throws {
        let queue = DispatchQueue(label: "refills-here")
        let source = InMemoryDataSource(data: bytes, chunkSize: 1000, refillDelay: (queue, 0.01))
        let result = Box<(Int, Int, BlobStreamError?)>((0, 0, nil))
        let done = DispatchSemaphore(value: 0)
        queue.async {
            let stream = BlobInputStream(dataSource: source)
            stream.open()
            var buffer = [UInt8](repeating: 0, count: 4096)
            let first = stream.read(&buffer, maxLength: 4096) // bytes are there
            let second = stream.read(&buffer, maxLength: 4096) // would wait for this queue
            result.value = (first, second, stream.streamError as? BlobStreamError)
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success, "the read on the completion queue hung")
        #expect(result.value.0 == 1000)
        #expect(result.value.1 == -1)
        #expect(result.value.2?.code == .wouldDeadlock)
    }

    @Test("close() from another thread wakes a waiting read, which returns -1")
    func closeWakesReader() {
        let queue = DispatchQueue(label: "never")
        // Opens, hands out 10 bytes, then waits an hour for more.
        let source = InMemoryDataSource(data: bytes, chunkSize: 10, refillDelay: (queue, 3600))
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let results = Box<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        let firstRead = DispatchSemaphore(value: 0)
        let reader = StreamHandle(stream)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 100)
            results.value.append(reader.stream.read(&buffer, maxLength: 100))
            firstRead.signal()
            results.value.append(reader.stream.read(&buffer, maxLength: 100))
            done.signal()
        }.start()
        // The 10 bytes were read; the next read waits an hour for the source.
        #expect(firstRead.wait(timeout: .now() + 10) == .success, "the first read did not return")
        stream.close()
        #expect(done.wait(timeout: .now() + 10) == .success, "close did not wake the reader")
        #expect(results.value == [10, -1])
    }
}

/// Hands a stream to another thread in a test (the test keeps the calls apart).
final class StreamHandle: @unchecked Sendable {
    let stream: BlobInputStream
    init(_ stream: BlobInputStream) { self.stream = stream }
}
