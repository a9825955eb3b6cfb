import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("BlobInputStream, asynchronous mode and run loops")
struct AsynchronousStreamTests {
    let bytes = sampleBytes(100_000)

    /// Opens an asynchronous stream on a background thread's run loop, reads `readSize`
    /// bytes on each hasBytesAvailable, closes at the end; returns the events and bytes.
    func runAsync(
        _ source: any BlobDataSource & Sendable, readSize: Int, mode: RunLoop.Mode = .default
    ) -> (events: [String], data: Data, finished: Bool) {
        let out = Box<([String], Data, Bool)>(([], Data(), false))
        let ok = onRunLoopThread {
            let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
            var buffer = [UInt8](repeating: 0, count: readSize)
            let recorder = EventRecorder { s, event in
                if event == .hasBytesAvailable {
                    let n = (s as! InputStream).read(&buffer, maxLength: readSize)
                    if n > 0 { out.value.1.append(buffer, count: n) }
                }
                if event == .endEncountered || event == .errorOccurred { s.close() }
            }
            stream.delegate = recorder
            stream.schedule(in: .current, forMode: mode)
            stream.open()
            #expect(stream.streamStatus != .notOpen, "open() returns at once, having started")
            // The handler's close must let the run loop go: nothing else keeps it running.
            out.value.2 = BlobInputStream.runCurrentRunLoop(mode: mode, timeout: 15) {
                stream.streamStatus == .closed
            }
            out.value.0 = recorder.names
        }
        #expect(ok)
        return (out.value.0, out.value.1, out.value.2)
    }

    @Test("openCompleted, hasBytesAvailable without a read, one per read, then end")
    func eventSequence() {
        let source = InMemoryDataSource(data: bytes, chunkSize: 25_000)
        let (events, data, finished) = runAsync(source, readSize: 25_000)
        #expect(finished)
        #expect(digest(data) == digest(bytes))
        // 4 reads of 25,000 bytes: the last read ends the source.
        #expect(events == ["open", "bytes", "bytes", "bytes", "bytes", "end"])
    }

    @Test("bytes that arrive later on another queue, with an asynchronous open")
    func asyncSource() {
        let queue = DispatchQueue(label: "async-source")
        let source = InMemoryDataSource(
            data: bytes, open: .async(queue: queue, delay: 0.02), chunkSize: 10_000,
            refillDelay: (queue, 0.001))
        let (events, data, finished) = runAsync(source, readSize: 65_536)
        #expect(finished)
        #expect(data == bytes)
        #expect(events.first == "open")
        #expect(events.dropFirst().first == "bytes")
        #expect(events.last == "end")
        #expect(events.filter { $0 == "bytes" }.count == 10)
    }

    @Test("an empty source: openCompleted then endEncountered, no error")
    func emptySource() {
        let (events, data, finished) = runAsync(InMemoryDataSource(data: Data()), readSize: 100)
        #expect(finished)
        #expect(data.isEmpty)
        #expect(events == ["open", "end"])
    }

    @Test("a source failing at open: exactly one errorOccurred")
    func failingOpen() {
        let (events, _, finished) = runAsync(
            InMemoryDataSource(data: bytes, failAtOpen: SampleError(tag: "x")), readSize: 100)
        #expect(finished)
        #expect(events == ["error"])
    }

    @Test("a source failing at byte N: N bytes, then one errorOccurred")
    func failingAtByte() {
        let (events, data, finished) = runAsync(
            InMemoryDataSource(data: bytes, failAt: (50_000, SampleError(tag: "y"))), readSize: 20_000)
        #expect(finished)
        #expect(data == bytes.prefix(50_000))
        #expect(events.filter { $0 == "error" }.count == 1)
        #expect(events.last == "error")
        #expect(!events.contains("end"))
    }

    @Test("a custom run-loop mode")
    func customMode() {
        let mode = RunLoop.Mode("BlobStreamTestMode")
        let (events, data, finished) = runAsync(InMemoryDataSource(data: bytes), readSize: 65_536, mode: mode)
        #expect(finished)
        #expect(data == bytes)
        #expect(events == ["open", "bytes", "bytes", "end"])
    }

    @Test("no events when never scheduled; queued events arrive once scheduled")
    func schedulingLater() {
        let ok = onRunLoopThread {
            let stream = BlobInputStream(dataSource: InMemoryDataSource(data: Data()), mode: .asynchronous)
            let recorder = EventRecorder()
            stream.delegate = recorder
            stream.open()
            // Run the loop a while: nothing is scheduled, nothing may arrive.
            _ = BlobInputStream.runCurrentRunLoop(timeout: 0.2) { false }
            #expect(recorder.names.isEmpty)
            stream.schedule(in: .current, forMode: .default)
            let arrived = BlobInputStream.runCurrentRunLoop(timeout: 10) { recorder.names.count == 2 }
            #expect(arrived)
            #expect(recorder.names == ["open", "end"])
            // And they arrive once: nothing more after another turn.
            _ = BlobInputStream.runCurrentRunLoop(timeout: 0.1) { false }
            #expect(recorder.names == ["open", "end"])
            stream.close()
        }
        #expect(ok)
    }

    @Test("a scheduled synchronous stream delivers the same events")
    func synchronousScheduled() {
        let ok = onRunLoopThread {
            let stream = BlobInputStream(dataSource: InMemoryDataSource(data: sampleBytes(10)), mode: .synchronous)
            let recorder = EventRecorder()
            stream.delegate = recorder
            stream.schedule(in: .current, forMode: .default)
            stream.open()
            #expect(BlobInputStream.runCurrentRunLoop(timeout: 10) { recorder.names.count == 2 })
            var buffer = [UInt8](repeating: 0, count: 100)
            #expect(stream.read(&buffer, maxLength: 100) == 10)
            #expect(BlobInputStream.runCurrentRunLoop(timeout: 10) { recorder.names.count == 3 })
            #expect(recorder.names == ["open", "bytes", "end"])
            stream.close()
        }
        #expect(ok)
    }

    @Test("closure clients get only the events in their mask; invalidating stops delivery")
    func closureClients() {
        let ok = onRunLoopThread {
            let source = InMemoryDataSource(data: sampleBytes(3000), chunkSize: 1000)
            let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
            let all = EventRecorder()
            let endOnly = EventRecorder()
            let removed = EventRecorder()
            var buffer = [UInt8](repeating: 0, count: 1000)
            let reader = stream.addEventHandler(for: [.hasBytesAvailable]) { s, _ in
                _ = s.read(&buffer, maxLength: 1000)
            }
            let a = stream.addEventHandler(for: [.openCompleted, .hasBytesAvailable, .endEncountered, .errorOccurred]) {
                s, e in all.record(s, e)
            }
            let b = stream.addEventHandler(for: .endEncountered) { s, e in endOnly.record(s, e) }
            let c = stream.addEventHandler(for: [.openCompleted, .hasBytesAvailable, .endEncountered]) { s, e in
                removed.record(s, e)
            }
            c.invalidate()
            stream.schedule(in: .current, forMode: .default)
            stream.open()
            #expect(
                BlobInputStream.runCurrentRunLoop(timeout: 10) {
                    stream.streamStatus == .atEnd && all.names.last == "end"
                })
            #expect(all.names == ["open", "bytes", "bytes", "bytes", "end"])
            #expect(endOnly.names == ["end"])
            #expect(removed.names.isEmpty)
            stream.close()
            withExtendedLifetime((reader, a, b)) {}
        }
        #expect(ok)
    }

    @Test("several run loops: each event is delivered once, on one of them")
    func severalRunLoops() {
        let stream = BlobInputStream(
            dataSource: InMemoryDataSource(data: sampleBytes(5000), chunkSize: 1000), mode: .asynchronous)
        let handle = StreamHandle(stream)
        let recorder = EventRecorder { s, e in
            var buffer = [UInt8](repeating: 0, count: 1000)
            if e == .hasBytesAvailable { _ = (s as! InputStream).read(&buffer, maxLength: 1000) }
        }
        stream.delegate = recorder
        let stop = Box(false)
        let loops = Box<[RunLoop]>([])
        let ready = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let lock = NSLock() // one for both threads and this one: it guards `loops` and `stop`
        for _ in 0..<2 {
            Thread {
                lock.withLock { loops.value.append(RunLoop.current) }
                handle.stream.schedule(in: .current, forMode: .default)
                ready.signal()
                _ = BlobInputStream.runCurrentRunLoop(timeout: 10) { lock.withLock { stop.value } }
                finished.signal()
            }.start()
        }
        ready.wait()
        ready.wait()
        stream.open()
        let done = recorder.wait(timeout: 10) { $0.last == .endEncountered }
        #expect(done)
        #expect(recorder.names == ["open", "bytes", "bytes", "bytes", "bytes", "bytes", "end"])
        lock.withLock { stop.value = true }
        finished.wait()
        finished.wait()
        stream.close()
    }
}
