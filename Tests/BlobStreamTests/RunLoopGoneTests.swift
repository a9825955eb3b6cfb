import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Users schedule streams on worker threads that end. When such a thread's run loop is gone,
/// closing, unscheduling and releasing the stream must not touch it: the wake-up timers are
/// taken out of their loops while the stream still holds those loops.
@Suite("BlobInputStream, a run loop whose thread has ended")
struct RunLoopGoneTests {
    /// Runs `body` on a POSIX thread of its own and returns once that thread has ended (its
    /// run loop released with it, as when a user's worker thread ends).
    static func onThreadThatEnds(_ body: @escaping @Sendable () -> Void) {
        final class Body: @unchecked Sendable {
            let run: @Sendable () -> Void
            init(_ run: @escaping @Sendable () -> Void) { self.run = run }
        }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        let made = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context)
        precondition(made == 0, "pthread_create: \(made)")
        pthread_join(thread, nil)
    }

    /// A stream scheduled and opened on a thread whose loop ran a few milliseconds, then ended.
    static func streamLeftByEndedThread(_ bytes: Data, refill: DispatchQueue) -> (BlobInputStream, RunLoop) {
        let made = Box<(BlobInputStream, RunLoop)?>(nil)
        onThreadThatEnds {
            let source = InMemoryDataSource(data: bytes, chunkSize: 1_000, refillDelay: (refill, 0))
            let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
            stream.schedule(in: .current, forMode: .default)
            stream.open()
            _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.002))
            made.value = (stream, RunLoop.current)
        }
        return made.value!
    }

    @Test("close() from another thread after the loop's thread ended, 400 rounds: no crash, the stream closed")
    func closeAfterThreadEnded() {
        let bytes = sampleBytes(50_000)
        let refill = DispatchQueue(label: "refill")
        for _ in 0..<400 {
            let stream = Self.streamLeftByEndedThread(bytes, refill: refill).0
            DispatchQueue.global().sync { stream.close() }
            #expect(stream.streamStatus == .closed)
        }
    }

    @Test("remove(from:) and release after the loop's thread ended, 400 rounds: no crash")
    func unscheduleAndReleaseAfterThreadEnded() {
        let bytes = sampleBytes(50_000)
        let refill = DispatchQueue(label: "refill")
        for round in 0..<400 {
            var (stream, loop): (BlobInputStream?, RunLoop?) = Self.streamLeftByEndedThread(bytes, refill: refill)
            if round % 2 == 0 {
                // The thread is gone; the run loop object the user kept is all that names it.
                stream!.remove(from: loop!, forMode: .default)
            }
            loop = nil
            // Reading on: events are queued and the (dead) loop's waker is armed again.
            var buffer = [UInt8](repeating: 0, count: 100)
            _ = stream!.read(&buffer, maxLength: buffer.count)
            DispatchQueue.global().sync { stream = nil }
            #expect(stream == nil && loop == nil)
        }
    }
}
