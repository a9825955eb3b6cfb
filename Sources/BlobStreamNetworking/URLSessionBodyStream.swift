import BlobStream
import BlobStreamUpload
import Foundation

// Threads and hand-offs of a URLSession upload (`URLSessionUpload`, `URLSessionUploader`),
// per chunk of the body: none in BlobStream's code. FoundationNetworking calls
// `hasBytesAvailable` and `read` on the session's work queue (libcurl's read callback); the
// stream reads its source there, synchronously (`BlobInputStream` in synchronous mode),
// into its 64 KiB look-ahead buffer, and copies that into libcurl's buffer. Progress and
// the upload's activity are updated on the same thread, under a lock, without allocating.
// (FoundationNetworking itself moves data between its queues and libcurl's multi handle,
// and allocates, per chunk.)

/// An `InputStream` fit for `URLRequest.httpBodyStream` on Linux.
///
/// FoundationNetworking on Linux calls `open()` (perhaps twice), then `hasBytesAvailable`
/// before every `read`, and ends the upload at the first `false` — with an answer of 200 and
/// no error, even when the body is not finished. It never calls `close()`. So this stream:
///
/// - blocks in `hasBytesAvailable` until it knows: it reads ahead (into a buffer it then
///   hands out) and answers `false` only at the real end;
/// - after a source error answers `true`, so that the next `read` returns −1, which aborts
///   the upload (the server sees a cut-off chunked body, never a complete-looking one);
/// - releases the source at the end or on the error, without waiting for `close()`;
/// - reports progress as bytes are read, the finishing report exactly once.
///
/// Blocking in `hasBytesAvailable` blocks the session's work queue while the source has no
/// bytes (an asset being looked up): use one `URLSession` per concurrent upload, or the
/// AsyncHTTPClient integration, when sources can be slow.
public final class URLSessionBodyStream: InputStream, @unchecked Sendable {
    // Unchecked Sendable: URLSession calls from GCD worker threads one at a time (after
    // `beforeRead` is set); every other mutable field is still in `state`, and the
    // look-ahead's bytes are used only inside `state.withLock`.
    private struct State {
        var lookaheadStart = 0, lookaheadCount = 0
        var opened = false, finished = false, failed = false
        var sent: Int64 = 0
    }

    private let state = Locked(State())
    private let inner: BlobInputStream
    private let total: Int64?
    private let onProgress: (@Sendable (UploadProgress) -> Void)?
    private let lookahead: UnsafeMutablePointer<UInt8>
    private let lookaheadCapacity = 64 * 1024
    /// Called before each `hasBytesAvailable`, outside the lock, on the session's thread:
    /// `URLSessionUpload` looks there for an answer that came before the body's end.
    var beforeRead: (@Sendable () -> Void)?

    /// A body stream over a fresh source (it opens and closes it itself).
    ///
    /// - Parameters:
    ///   - dataSource: the body's bytes.
    ///   - length: the body's length for progress, when known (defaults to the source's).
    ///   - progress: called on URLSession's threads as the body is read.
    public init(
        dataSource: any BlobDataSource, length: Int64? = nil, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) {
        inner = BlobInputStream(dataSource: dataSource, mode: .synchronous)
        total = length ?? dataSource.length
        onProgress = progress
        lookahead = .allocate(capacity: lookaheadCapacity)
        super.init(data: Data())
    }

    /// A body stream over a fresh source of `body`.
    public convenience init(body: UploadBody, progress: (@Sendable (UploadProgress) -> Void)? = nil) throws {
        self.init(dataSource: try body.makeSource(), length: body.length, progress: progress)
    }

    deinit {
        inner.close()
        lookahead.deallocate()
    }

    /// Bytes read so far.
    public var bytesSent: Int64 { state.withLock { s in s.sent } }

    /// The error that stopped the body, if any.
    public override var streamError: (any Error)? { inner.streamError }

    /// `.error` once the body failed, `.atEnd` after its last byte, else `.open` or `.notOpen`.
    public override var streamStatus: Stream.Status {
        state.withLock { s in
            if s.failed { return .error }
            if s.finished { return .atEnd }
            return s.opened ? .open : .notOpen
        }
    }

    /// Opens the source; a second call does nothing.
    public override func open() {
        state.withLock { s in
            guard !s.opened else { return }
            s.opened = true
            inner.open()
            if inner.streamError != nil { s.failed = true }
        }
    }

    /// Releases the source (URLSession never calls it; the end and errors release it too).
    public override func close() {
        state.withLock { s in finish(&s, failed: s.failed) }
    }

    /// Blocks until it knows: true while bytes remain or after an error (so `read` can
    /// report it), false only at the real end.
    public override var hasBytesAvailable: Bool {
        beforeRead?()
        return state.withLock { s in
            if s.failed { return true }
            if s.finished { return false }
            if s.lookaheadCount > 0 { return true }
            if !s.opened {
                s.opened = true
                inner.open()
            }
            let n = inner.read(lookahead, maxLength: lookaheadCapacity)
            if n > 0 {
                s.lookaheadStart = 0
                s.lookaheadCount = n
                return true
            }
            if n == 0 {
                finish(&s, failed: false)
                return false
            }
            s.failed = true
            return true
        }
    }

    /// The next bytes of the body, waiting for the source rather than saying "none" (which
    /// FoundationNetworking would take for the end); 0 at the end, −1 on an error.
    public override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        state.withLock { s in
            if s.failed {
                finish(&s, failed: true)
                return -1
            }
            if s.finished || len <= 0 { return 0 }
            let n: Int
            if s.lookaheadCount > 0 {
                n = min(len, s.lookaheadCount)
                buffer.update(from: lookahead + s.lookaheadStart, count: n)
                s.lookaheadStart += n
                s.lookaheadCount -= n
            } else {
                if !s.opened {
                    s.opened = true
                    inner.open()
                }
                n = inner.read(buffer, maxLength: len)
                if n == 0 {
                    finish(&s, failed: false)
                    return 0
                }
                if n < 0 {
                    finish(&s, failed: true)
                    return -1
                }
            }
            s.sent += Int64(n)
            onProgress?(UploadProgress(sent: s.sent, total: total, isFinished: false))
            return n
        }
    }

    /// Called inside `state.withLock`, with its value `s`.
    private func finish(_ s: inout State, failed: Bool) {
        guard !s.finished else { return }
        s.finished = true
        s.failed = failed
        inner.close()
        if !failed { onProgress?(UploadProgress(sent: s.sent, total: total, isFinished: true)) }
    }

    /// No buffer is lent: `false`.
    public override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool { false }
    /// No properties: a body is read from its start (`nil`).
    public override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    /// No properties can be set (`false`).
    public override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }
    /// Does nothing: URLSession reads the body synchronously on its own queue.
    public override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    /// Does nothing (see `schedule(in:forMode:)`).
    public override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
}
