import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("Observation of data-source state")
struct ObservationTests {
    final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [String] = []
        func add(_ s: String) { lock.withLock { items.append(s) } }
        var all: [String] { lock.withLock { items } }
    }

    @Test("each property's change reaches its observer with old and new values")
    func oldAndNew() {
        let state = BlobDataSourceState()
        let log = Log()
        let tokens = [
            state.observe(.isOpenCompleted, options: [.old, .new]) {
                log.add("open \($0.oldValue!)->\($0.newValue!)")
            },
            state.observe(.hasBytesAvailable, options: [.old, .new]) {
                log.add("bytes \($0.oldValue!)->\($0.newValue!)")
            },
            state.observe(.isAtEnd, options: [.new]) {
                log.add("end ->\($0.newValue!) old:\(String(describing: $0.oldValue))")
            },
            state.observe(.error, options: [.old, .new]) { c in
                log.add("error \(String(describing: c.oldValue!))->\(String(describing: c.newValue!))")
            },
        ]
        state.isOpenCompleted = true
        state.isOpenCompleted = true // equal: nothing announced
        state.hasBytesAvailable = true
        state.isAtEnd = true // also clears hasBytesAvailable
        state.error = SampleError(tag: "e")
        state.error = SampleError(tag: "f") // sticky: ignored
        #expect(
            log.all == [
                "open false->true", "bytes false->true", "bytes true->false", "end ->true old:nil",
                "error nil->Optional(sample failure e)",
            ])
        #expect((state.error as? SampleError)?.tag == "e")
        withExtendedLifetime(tokens) {}
    }

    @Test("initial value at once; an invalidated or released token gets nothing")
    func tokens() {
        let state = BlobDataSourceState()
        let log = Log()
        let kept = state.observe(.hasBytesAvailable, options: [.initial, .new]) {
            log.add("kept \($0.newValue!) \($0.isInitial)")
        }
        let invalidated = state.observe(.hasBytesAvailable) { _ in log.add("invalidated") }
        invalidated.invalidate()
        invalidated.invalidate() // twice is fine
        do {
            _ = state.observe(.hasBytesAvailable) { _ in log.add("released") }
        }
        state.hasBytesAvailable = true
        #expect(log.all == ["kept false true", "kept true false"])
        withExtendedLifetime(kept) {}
    }

    @Test("observers may register and invalidate observations from inside a callback")
    func reentrant() {
        let state = BlobDataSourceState()
        let log = Log()
        let inner = Box<BlobObservation?>(nil)
        let selfRef = Box<BlobObservation?>(nil)
        selfRef.value = state.observe(.hasBytesAvailable) { change in
            log.add("outer \(change.newValue!)")
            selfRef.value?.invalidate()
            inner.value = state.observe(.isAtEnd) { log.add("inner \($0.newValue!)") }
        }
        state.hasBytesAvailable = true
        state.hasBytesAvailable = false
        state.isAtEnd = true
        #expect(log.all == ["outer true", "inner true"])
    }

    @Test("works on any BlobDataSource, delivered on the thread that made the change")
    func existentialAndThread() {
        let queue = DispatchQueue(label: "announcer")
        let source: any BlobDataSource = InMemoryDataSource(data: sampleBytes(10), open: .async(queue: queue, delay: 0))
        let onQueue = Box(false)
        let done = DispatchSemaphore(value: 0)
        let token = source.observe(.isOpenCompleted) { _ in
            onQueue.value = BlobCompletionContext.queue(queue).isCurrent
            done.signal()
        }
        source.open()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(onQueue.value)
        token.invalidate()
    }

    @Test("1,000 open/read/close cycles across threads with sources announcing from other threads")
    func stress() async {
        let bytes = sampleBytes(20_000)
        let expected = digest(bytes)
        let failures = Log()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    let announcer = DispatchQueue(label: "announcer-\(worker)")
                    for cycle in 0..<250 {
                        let source = InMemoryDataSource(
                            data: bytes, open: .async(queue: announcer, delay: 0), chunkSize: 3000 + cycle,
                            refillDelay: cycle % 2 == 0 ? (announcer, 0) : nil)
                        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
                        let watcher = source.observe(.hasBytesAvailable) { _ in }
                        stream.open()
                        let (data, last) = drain(stream, size: 4096 + cycle)
                        if last != 0 || digest(data) != expected {
                            failures.add("worker \(worker) cycle \(cycle): \(data.count) bytes, last \(last)")
                        }
                        if cycle % 3 == 0 {
                            // close from another thread while announcements may still run
                            let h = StreamHandle(stream)
                            announcer.async { h.stream.close() }
                        } else {
                            stream.close()
                        }
                        watcher.invalidate()
                    }
                }
            }
        }
        #expect(failures.all.isEmpty)
    }
}
