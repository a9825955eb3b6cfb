import AsyncHTTPClient
import BlobStream
import BlobStreamUpload
import Foundation
import NIOCore

// Threads and hand-offs of an AsyncHTTPClient upload (`HTTPClientUploader`), per chunk of
// the body:
//
// - the pump's thread (one per body, started when the client asks for the body) reads the
//   next chunk from the source, in its calling thread (`BlobInputStream` synchronous reads,
//   blocking I/O allowed), straight into a `ByteBuffer` of a ring, and hands it to the
//   client's stream writer;
// - the writer submits the write to the request's event loop — the one hand-off between
//   threads per chunk — which writes it to the socket (the request is pinned to one loop
//   for its task and its channel, so there is no second hop);
// - when the write is done the event loop reports it (`AnswerDelegate.didSendRequestPart`),
//   which credits the pump's window; the pump waits only when 4 chunks are in flight, and
//   then until 2 are left, so a slow network wakes it once per two chunks, not per chunk.
//
// Nothing here allocates per chunk in steady state: the ring's buffers are filled again
// once the event loop has let go of them, the window is counters under a condition, and
// progress is a struct passed to a closure. (NIO allocates a task per hop and promises
// per write itself.) The task that awaits the answer only waits.

/// Reads a body's source on a thread of its own and writes its chunks to a sink, at most
/// `window` chunks ahead of what the sink reported written.
///
/// Unchecked Sendable: `queued`, `written`, `stopped` and `stream` are guarded by
/// `condition`; the ring, the read position and `write` are used only by the pump's thread.
package final class BodyPump: @unchecked Sendable {
    private let condition = NSCondition()
    private let source: Result<any BlobDataSource, any Error>
    private let mode: BlobInputStream.Mode
    private let chunkSize: Int
    private let window: Int64
    private let total: Int64?
    private let progress: (@Sendable (UploadProgress) -> Void)?
    private let activity: UploadActivity?
    private let ring: BufferRing
    private var stream: BlobInputStream?
    private var queued: Int64 = 0
    private var written: Int64 = 0
    private var stopped = false

    /// A pump over `source` (already made; a failure to make it is reported by `run`).
    ///
    /// - Parameters:
    ///   - window: how many chunks may be handed to the sink and not yet reported written.
    package init(
        source: Result<any BlobDataSource, any Error>, mode: BlobInputStream.Mode, chunkSize: Int, window: Int = 4,
        total: Int64?, progress: (@Sendable (UploadProgress) -> Void)?, activity: UploadActivity?
    ) {
        precondition(chunkSize > 0 && window > 0)
        self.source = source
        self.mode = mode
        self.chunkSize = chunkSize
        self.window = Int64(window)
        self.total = total
        self.progress = progress
        self.activity = activity
        // Two more buffers than the window: a buffer is refilled only once its bytes were
        // written, and by then the event loop has let go of it (no copy-on-write).
        ring = BufferRing(count: window + 2)
    }

    /// Runs `run(write:)` on a thread of its own and calls `completion` with its outcome.
    package func start(
        write: @escaping @Sendable (ByteBuffer) -> Void, completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        let thread = Thread { completion(self.run(write: write)) }
        thread.name = "BlobStream.BodyPump"
        thread.start()
    }

    /// Reads the whole body on the calling thread, handing each chunk to `write`, and
    /// returns once every chunk was reported written: nil, or the source's error, or
    /// `CancellationError` when `stop()` was called.
    package func run(write: (ByteBuffer) -> Void) -> (any Error)? {
        let stream: BlobInputStream
        switch source {
        case .failure(let error): return error
        case .success(let source): stream = BlobInputStream(dataSource: source, mode: mode)
        }
        let proceed = condition.withLock { () -> Bool in
            self.stream = stream
            return !stopped
        }
        guard proceed else {
            stream.close()
            return CancellationError()
        }
        defer { stream.close() }
        stream.open()
        var sent: Int64 = 0
        while true {
            // Room in the window: wait for the in-flight chunks to come down to half of it.
            let go = condition.withLock { () -> Bool in
                if queued - written >= window * Int64(chunkSize) {
                    while !stopped, queued - written > window * Int64(chunkSize) / 2 { condition.wait() }
                }
                return !stopped
            }
            guard go else { return CancellationError() }
            var n = 0
            let chunk = ring.fill(capacity: chunkSize) { raw in
                n = stream.read(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: chunkSize)
                return max(n, 0)
            }
            if n < 0 {
                if condition.withLock({ stopped }) { return CancellationError() }
                return stream.streamError ?? BlobStreamError(.closed, "the stream was closed before its end")
            }
            if n == 0 { break }
            condition.withLock { queued += Int64(n) }
            write(chunk)
            sent += Int64(n)
            activity?.body(sent: sent, finished: false)
            progress?(UploadProgress(sent: sent, total: total, isFinished: false))
        }
        activity?.body(sent: sent, finished: true)
        progress?(UploadProgress(sent: sent, total: total, isFinished: true))
        // The end: once every chunk was written.
        let drained = condition.withLock { () -> Bool in
            while !stopped, written < queued { condition.wait() }
            return written >= queued
        }
        return drained ? nil : CancellationError()
    }

    /// The sink wrote `bytes` more of the chunks it was handed (any thread).
    package func acknowledge(_ bytes: Int) {
        condition.withLock {
            written += Int64(bytes)
            condition.signal()
        }
    }

    /// Stops the pump (any thread): a read under way is woken (the stream is closed), a
    /// wait for the window ends, and `run` returns `CancellationError`.
    package func stop() {
        let stream = condition.withLock { () -> BlobInputStream? in
            stopped = true
            condition.broadcast()
            return self.stream
        }
        stream?.close()
    }
}

/// The pumps of one upload attempt: the client asks for the body once per request it sends
/// (again after a redirect it follows itself), and the answer's delegate credits the
/// current one with the bytes written; a source's error is kept in `failure`, so that the
/// upload's error names it.
final class BodyPumps: Sendable {
    private struct State {
        var current: BodyPump?
        var cancelled = false
    }

    private let state = Locked(State())
    private let failure: SourceFailure

    init(failure: SourceFailure) { self.failure = failure }

    /// Starts `pump` writing to `writer`; the returned future completes when the whole
    /// body was written, or fails with the pump's error.
    func start(_ pump: BodyPump, writer: HTTPClient.Body.StreamWriter, on eventLoop: any EventLoop)
        -> EventLoopFuture<Void>
    {
        let promise = eventLoop.makePromise(of: Void.self)
        let previous = state.withLock { s -> BodyPump? in
            defer { s.current = pump }
            return s.current
        }
        previous?.stop()
        if state.withLock({ s in s.cancelled }) { pump.stop() }
        let failure = self.failure
        pump.start(write: { _ = writer.write(.byteBuffer($0)) }) { error in
            guard let error else { return promise.succeed() }
            if !(error is CancellationError) { failure.record(error) }
            promise.fail(error)
        }
        return promise.futureResult
    }

    /// The client wrote `bytes` of the current body.
    func acknowledge(_ bytes: Int) {
        state.withLock { s in s.current }?.acknowledge(bytes)
    }

    /// Stops every pump (the request ended).
    func cancel() {
        let pump = state.withLock { s -> BodyPump? in
            s.cancelled = true
            return s.current
        }
        pump?.stop()
    }
}
