import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("Typed observation (BlobObservable) and status sequences")
struct TypedObservationTests {
    @Test("each value's change reaches a typed observer with old and new values")
    func oldAndNew() {
        let state = BlobDataSourceState()
        let log = ConcurrentLog<String>()
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
        withExtendedLifetime(tokens) {}
    }

    @Test("a typed observer hears only its own value; .initial gives the current one")
    func onlyItsOwnValue() {
        let state = BlobDataSourceState()
        state.isOpenCompleted = true
        let log = ConcurrentLog<String>()
        let token = state.observe(.isAtEnd, options: [.initial, .new]) {
            log.add("end \($0.newValue!) initial:\($0.isInitial)")
        }
        state.hasBytesAvailable = true
        state.hasBytesAvailable = false
        state.isOpenCompleted = false
        state.isAtEnd = true
        token.invalidate()
        state.isAtEnd = false
        #expect(log.all == ["end false initial:true", "end true initial:false"])
    }

    @Test("observables name their property and read it from a snapshot")
    func namesAndValues() {
        var status = BlobDataSourceStatus()
        status.isOpenCompleted = true
        status.isAtEnd = true
        status.error = SampleError(tag: "s")
        #expect(BlobObservable.isOpenCompleted.description == "isOpenCompleted")
        #expect(BlobObservable.hasBytesAvailable.description == "hasBytesAvailable")
        #expect(BlobObservable.isAtEnd.description == "isAtEnd")
        #expect(BlobObservable.error.description == "error")
        #expect(BlobObservable.isOpenCompleted.value(in: status))
        #expect(!BlobObservable.hasBytesAvailable.value(in: status))
        #expect(BlobObservable.isAtEnd.value(in: status))
        #expect((BlobObservable.error.value(in: status) as? SampleError)?.tag == "s")
    }

    @Test("the stream reports a source's events when it is observed with typed observers")
    func sourceThroughStream() {
        let source = InMemoryDataSource(data: sampleBytes(100_000), chunkSize: 4096)
        let log = ConcurrentLog<String>()
        let tokens = [
            source.observe(.isOpenCompleted) { log.add("open \($0.newValue!)") },
            source.observe(.isAtEnd) { log.add("end \($0.newValue!)") },
        ]
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let (data, last) = drain(stream, size: 10_000)
        stream.close()
        #expect(last == 0)
        #expect(digest(data) == digest(sampleBytes(100_000)))
        #expect(log.all == ["open true", "end true"])
        withExtendedLifetime(tokens) {}
    }

    @Test("values(of:) yields the current value, then each change in order")
    func valuesSequence() async {
        let state = BlobDataSourceState()
        var values = state.values(of: .hasBytesAvailable).makeAsyncIterator()
        state.hasBytesAvailable = true
        state.hasBytesAvailable = false
        state.hasBytesAvailable = true
        var seen: [Bool] = []
        for _ in 0..<4 { if let v = await values.next() { seen.append(v) } }
        #expect(seen == [false, true, false, true])

        var errors = state.values(of: .error).makeAsyncIterator()
        state.error = SampleError(tag: "late")
        let first = await errors.next()
        let second = await errors.next()
        guard case .some(.none) = first, case .some(.some(let error)) = second else {
            Issue.record("expected nil then the error, got \(String(describing: first)), \(String(describing: second))")
            return
        }
        #expect((error as? SampleError)?.tag == "late")
    }

    @Test("values(of:) on a source: await its asynchronous open, announced from another queue")
    func awaitAsynchronousOpen() async throws {
        let queue = DispatchQueue(label: "TypedObservationTests.open")
        let source = InMemoryDataSource(data: sampleBytes(1000), open: .async(queue: queue, delay: 0.05))
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        stream.open()
        var opened = false
        for await value in source.values(of: .isOpenCompleted) where value {
            opened = true
            break
        }
        #expect(opened)
        #expect(source.isOpenCompleted)
        stream.close()
    }

    @Test("a dropped or cancelled values(of:) sequence ends its subscription")
    func sequenceEndsSubscription() async {
        let state = BlobDataSourceState()
        let task = Task {
            var count = 0
            for await _ in state.values(of: .isAtEnd) { count += 1 }
            return count
        }
        // Wait until the task has subscribed and taken the initial value.
        while state.observerCount == 0 { await Task.yield() }
        task.cancel()
        let count = await task.value
        #expect(count >= 1)
        // Cancelled: the subscription is gone (a change now reaches no one).
        var waited = 0
        while state.observerCount > 0 && waited < 10_000 {
            await Task.yield()
            waited += 1
        }
        #expect(state.observerCount == 0)
    }
}
