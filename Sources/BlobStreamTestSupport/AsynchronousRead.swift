import BlobStream
import Foundation

/// What reading a source through an asynchronous `BlobInputStream` gave: the bytes, the
/// events in order, and how it ended.
///
/// ```swift
/// let result = AsynchronousRead(reading: MySource(bytes))
/// #expect(result.last == 0 && result.data == bytes)
/// #expect(Array(result.events.prefix(2)) == ["open", "bytes"])
/// ```
public struct AsynchronousRead: Sendable {
    /// The bytes read.
    public var data = Data()
    /// `EventRecorder.name` of each event delivered, in order.
    public var events: [String] = []
    /// The stream reached its end or its error within the timeout.
    public var finished = false
    /// The stream's error (nil after a clean end).
    public var error: BlobStreamError?

    /// The source's own error: the cause the stream's error wraps, or that error itself.
    public var sourceError: BlobStreamError? { (error?.cause as? BlobStreamError) ?? error }

    /// 0 for a clean end, −1 for an error, nil when the read did not finish.
    public var last: Int? { finished ? (error == nil && events.last == "end" ? 0 : -1) : nil }

    /// Nothing read, not finished.
    init() {}

    /// Reads `source` through an asynchronous stream scheduled on the run loop of a thread
    /// of its own: on each `.hasBytesAvailable` one read of `size` bytes (or of what
    /// `nextSize` says for the count read so far), after which `progress` runs with that
    /// count; the stream is closed at its end or its error. Waits at most `timeout`
    /// seconds; `finished` tells whether that was enough.
    ///
    /// - Parameters:
    ///   - source: the source to read, not opened yet.
    ///   - offset: set with `seek(to:)` before `open()`.
    ///   - size: the bytes asked for in each read.
    ///   - timeout: the most seconds the whole read may take.
    ///   - nextSize: when given, the size of the next read for the count read so far.
    ///   - progress: runs after each read with the count read so far.
    public init(
        reading source: any BlobDataSource, offset: Int64? = nil, size: Int = 65_536, timeout: TimeInterval = 30,
        nextSize: (@Sendable (Int) -> Int)? = nil, progress: (@Sendable (Int) -> Void)? = nil
    ) {
        let result = TestBox(AsynchronousRead())
        let done = DispatchSemaphore(value: 0)
        let handoff = Handoff(value: source)
        let thread = Thread {
            result.value = AsynchronousRead(
                readingHere: handoff.value, offset: offset, size: size, timeout: timeout, nextSize: nextSize,
                progress: progress)
            done.signal()
        }
        thread.stackSize = 4 << 20
        thread.start()
        self = done.wait(timeout: .now() + timeout + 5) == .success ? result.value : AsynchronousRead()
    }

    /// As `init(reading:…)`, on the current thread's run loop.
    public init(
        readingHere source: any BlobDataSource, offset: Int64? = nil, size: Int = 65_536, timeout: TimeInterval = 30,
        nextSize: (@Sendable (Int) -> Int)? = nil, progress: (@Sendable (Int) -> Void)? = nil
    ) {
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        if let offset { try? stream.seek(to: offset) } // a refused offset reads from the start
        var data = Data()
        var error: BlobStreamError?
        var buffer = [UInt8](repeating: 0, count: size)
        let recorder = EventRecorder { s, event in
            if event == .hasBytesAvailable {
                let want = max(1, min(size, nextSize?(data.count) ?? size))
                let n = (s as! InputStream).read(&buffer, maxLength: want)
                if n > 0 {
                    data.append(buffer, count: n)
                    progress?(data.count)
                }
            } else if event == .endEncountered || event == .errorOccurred {
                error = s.streamError as? BlobStreamError
                s.close()
            }
        }
        stream.delegate = recorder
        stream.schedule(in: .current, forMode: .default)
        stream.open()
        finished = BlobInputStream.runCurrentRunLoop(timeout: timeout) { stream.streamStatus == .closed }
        stream.close()
        self.data = data
        self.error = error
        self.events = recorder.names
    }
}
