import BlobStreamTestSupport
import Foundation
import Testing

@testable import BlobStream

/// Foundation on Linux never frees a `Timer` (it keeps a reference to itself that nothing
/// releases, invalidated or not), so the timers that wake run loops for events must not
/// grow with the events: one per run loop a stream is scheduled on.
@Suite("BlobInputStream, run-loop wake-ups")
struct WakeUpTests {
    @Test("1,000 wake-ups on one run loop use one timer, and close invalidates it")
    func oneTimerPerRunLoop() {
        let bytes = sampleBytes(100_000)
        let out = Box<(events: [String], data: Data, made: Int, left: Int, valid: Bool)>(([], Data(), -1, -1, true))
        let ok = onRunLoopThread {
            // Each read drops `hasBytesAvailable`; the source announces it again from a queue,
            // so every event is a wake-up of its own.
            let source = InMemoryDataSource(
                data: bytes, chunkSize: 100, refillDelay: (DispatchQueue(label: "refill"), 0))
            let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
            var buffer = [UInt8](repeating: 0, count: 100)
            let recorder = EventRecorder { s, event in
                if event == .hasBytesAvailable {
                    let n = (s as! InputStream).read(&buffer, maxLength: 100)
                    if n > 0 { out.value.data.append(buffer, count: n) }
                }
            }
            stream.delegate = recorder
            stream.schedule(in: .current, forMode: .default)
            stream.open()
            _ = BlobInputStream.runCurrentRunLoop(timeout: 15) { recorder.names.last == "end" }
            let timers = stream.core.condition.withLock { stream.core.wakers.map(\.timer) }
            stream.close()
            out.value.events = recorder.names
            out.value.made = stream.core.condition.withLock { stream.core.wakersMade }
            out.value.left = stream.core.condition.withLock { stream.core.wakers.count }
            out.value.valid = timers.contains { $0.isValid }
        }
        #expect(ok)
        #expect(digest(out.value.data) == digest(bytes))
        #expect(out.value.events == ["open"] + Array(repeating: "bytes", count: 1_000) + ["end"])
        #expect(out.value.made == 1, "wake-up timers made for 1,002 events on one run loop")
        #expect(out.value.left == 0)
        #expect(!out.value.valid, "close() invalidates the wake-up timer")
    }

    @Test("two run loops: one timer each; unscheduling a mode replaces that loop's timer only")
    func timersFollowSchedules() {
        let bytes = sampleBytes(20_000)
        let extra = RunLoop.Mode("BlobStreamWakeUpTestMode")
        let out = Box<(data: Data, made: Int, events: [String])>((Data(), -1, []))
        let ok = onRunLoopThread {
            let other = Box<RunLoop?>(nil)
            let otherReady = DispatchSemaphore(value: 0)
            let stop = DispatchSemaphore(value: 0)
            // A second thread whose run loop is scheduled but never runs: the first loop
            // still delivers every event.
            Thread {
                other.value = RunLoop.current
                otherReady.signal()
                stop.wait()
            }.start()
            otherReady.wait()
            // A chunk every 20 ms: `run(mode:before:)` runs its whole 50 ms slice through timers,
            // so the extra mode sees only the first few events.
            let source = InMemoryDataSource(
                data: bytes, chunkSize: 1_000, refillDelay: (DispatchQueue(label: "refill"), 0.02))
            let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
            var buffer = [UInt8](repeating: 0, count: 1_000)
            let recorder = EventRecorder { s, event in
                if event == .hasBytesAvailable {
                    let n = (s as! InputStream).read(&buffer, maxLength: 1_000)
                    if n > 0 { out.value.data.append(buffer, count: n) }
                }
            }
            stream.delegate = recorder
            stream.schedule(in: .current, forMode: .default)
            stream.schedule(in: .current, forMode: extra)
            stream.schedule(in: other.value!, forMode: .default)
            stream.open()
            _ = BlobInputStream.runCurrentRunLoop(mode: extra, timeout: 15) { recorder.names.count >= 5 }
            // Leaving the extra mode replaces this loop's timer (a timer cannot leave one
            // mode); the default mode then delivers the rest.
            stream.remove(from: .current, forMode: extra)
            _ = BlobInputStream.runCurrentRunLoop(timeout: 15) { recorder.names.last == "end" }
            stream.close()
            stop.signal()
            out.value.made = stream.core.condition.withLock { stream.core.wakersMade }
            out.value.events = recorder.names
        }
        #expect(ok)
        #expect(out.value.data == bytes)
        #expect(out.value.events == ["open"] + Array(repeating: "bytes", count: 20) + ["end"])
        #expect(out.value.made == 3, "one per loop, and one replacement")
    }

    @Test("events waiting for a run loop that does not run arrive once a running loop is added")
    func scheduleWhileArmed() {
        let out = Box<[String]>([])
        let ok = onRunLoopThread {
            let idle = Box<RunLoop?>(nil)
            let ready = DispatchSemaphore(value: 0)
            let stop = DispatchSemaphore(value: 0)
            Thread {
                idle.value = RunLoop.current
                ready.signal()
                stop.wait()
            }.start()
            ready.wait()
            let stream = BlobInputStream(dataSource: InMemoryDataSource(data: Data()), mode: .asynchronous)
            let recorder = EventRecorder()
            stream.delegate = recorder
            stream.schedule(in: idle.value!, forMode: .default)
            stream.open() // open and end are queued, and that loop is woken, but never runs
            stream.schedule(in: .current, forMode: .default)
            _ = BlobInputStream.runCurrentRunLoop(timeout: 10) { recorder.names.count == 2 }
            stream.close()
            stop.signal()
            out.value = recorder.names
        }
        #expect(ok)
        #expect(out.value == ["open", "end"])
    }
}
