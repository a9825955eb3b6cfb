import BlobStream
import Foundation

/// A data source whose bytes are its upstream's, compressed into zstd's seekable format as
/// they are read (`ZstdSeekableCompressor`): a body for an upload, a file, any consumer of a
/// stream, with no temporary file.
///
/// ```swift
/// let body = ZstdSeekableCompressingSource(upstream: FileDataSource(path: "/data/events.jsonl"))
/// let stream = BlobInputStream(dataSource: body) // events.jsonl.zst, seekable
/// ```
///
/// Every frame holds `frameSize` bytes of the upstream (the last fewer), with its content
/// size and checksum; the seek table at the end has every frame's checksum. `ZstdDataSource`,
/// pyzstd's `SeekableZstdFile` and indexed_zstd enter the result at any offset; any zstd
/// decoder reads it whole.
///
/// Memory: about twice `frameSize` (one frame of input, one compressed). The bytes come in
/// order only (`offsetCapability` is `.none`); `length` is unknown. An upstream that fails
/// or ends early fails this source with its error, never a shorter file that looks whole.
///
/// Ownership and threads are as `ZstdDataSource`'s: the source opens and closes its
/// upstream; over an asynchronous upstream, reads wait for its bytes, and `interrupt()` or
/// `close()` from another thread ends the wait.
public final class ZstdSeekableCompressingSource: BlobDataSource, UpstreamOpenAnnouncing, @unchecked Sendable {
    // Unchecked Sendable: every mutable stored property, the compressor and the upstream
    // reader are guarded by `lock`; `state` is thread-safe itself; the rest is immutable.

    /// The observable state.
    public let state = BlobDataSourceState()
    /// The name used in error messages.
    public let name: String
    /// The decompressed bytes of each frame.
    public let frameSize: Int
    /// The zstd level.
    public let level: Int

    /// The upstream, and whether it was started or closed (guarded by `lock`).
    private let owned: OwnedUpstream
    private let compressor: ZstdSeekableCompressor
    private let lock = NSLock()

    // MARK: Guarded by `lock`

    private var failure: BlobStreamError?
    /// Compressed bytes made and not handed out yet.
    private var pending: [UInt8] = []
    private var pendingStart = 0
    /// The upstream ended and the table was made.
    private var finished = false
    /// The upstream bytes compressed so far.
    private var consumed: Int64 = 0

    /// Makes a source that compresses `upstream`.
    ///
    /// - Parameters:
    ///   - upstream: the bytes to compress, not opened yet; this source opens and closes it.
    ///   - level: the zstd level (3 by default, as `zstd`'s).
    ///   - frameSize: the bytes of each frame (4 MiB by default; 1 byte to 1 GiB).
    ///   - name: how errors name the source.
    /// - Throws: `.unsupported` for a level or frame size out of range.
    public init(
        upstream: any BlobDataSource, level: Int = 3, frameSize: Int = ZstdSeekableCompressor.defaultFrameSize,
        name: String? = nil
    ) throws(BlobStreamError) {
        let compressor = try ZstdSeekableCompressor(level: level, frameSize: frameSize)
        self.owned = OwnedUpstream(
            upstream, bufferSize: 256 * 1024, label: "BlobStreamZstd.ZstdSeekableCompressingSource.open")
        self.compressor = compressor
        self.frameSize = frameSize
        self.level = level
        self.name = name ?? "seekable zstd of \(type(of: upstream))"
        owned.announce(to: self)
    }

    /// The source of the bytes compressed; owned (opened and closed) by this source.
    public var upstream: any BlobDataSource { owned.reader.source }

    /// The seek table of the frames made so far: the whole file's once the read reached
    /// its end.
    public var seekTable: ZstdSeekTable { lock.withLock { compressor.seekTable } }

    /// `.caller` over a synchronous upstream; otherwise the upstream's context or this
    /// source's private queue (where the open is announced).
    public var completionContext: BlobCompletionContext { owned.completionContext }

    /// Opens the upstream; completes when it has opened.
    public func open() {
        if owned.start(locking: lock) { announceOpenIfReady() }
    }

    /// Hands out up to `maxLength` compressed bytes; 0 after the seek table.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        lock.lock()
        let n = readLocked(buffer, maxLength: maxLength)
        let error = failure
        lock.unlock()
        state.announceRead(n, failure: error, name: name)
        return n
    }

    private func readLocked(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard owned.isReadable, failure == nil else { return -1 }
        guard maxLength > 0 else { return 0 }
        while pendingStart == pending.count {
            if finished { return 0 }
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
            do {
                try compressMore()
            } catch {
                failure = failure ?? error
                return -1
            }
        }
        let n = min(maxLength, pending.count - pendingStart)
        pending.withUnsafeBytes {
            UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress! + pendingStart, byteCount: n)
        }
        pendingStart += n
        return n
    }

    /// Feeds the compressor the upstream's next bytes (or its end); what it makes goes to
    /// `pending`.
    private func compressMore() throws(BlobStreamError) {
        switch owned.reader.fill(waiting: true) {
        case .bytes(let bytes):
            do {
                try compressor.append(bytes) { pending.append(contentsOf: $0) }
            } catch {
                throw error as? BlobStreamError ?? BlobStreamError(.sourceFailed, "\(name): \(error)")
            }
            consumed += Int64(bytes.count)
            owned.reader.consume(bytes.count)
        case .end:
            do {
                try compressor.finish { pending.append(contentsOf: $0) }
            } catch {
                throw error as? BlobStreamError ?? BlobStreamError(.sourceFailed, "\(name): \(error)")
            }
            finished = true
        case .starved:
            throw BlobStreamError(.sourceFailed, "\(name): the upstream had no bytes at offset \(consumed)")
        case .failed(let error):
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed,
                "\(name): the upstream failed at offset \(consumed): \(error)", cause: error)
        }
    }

    /// Passes the interruption on to the upstream, where a read may be blocked.
    public func interrupt() {
        owned.interrupt()
    }

    /// Closes the upstream. Further reads return −1.
    public func close() {
        owned.close(locking: lock) {
            pending = []
            pendingStart = 0
        }
    }

    /// Announces the open (or the upstream's failure to open) once the upstream's is done.
    func announceOpenIfReady() {
        lock.lock()
        let outcome = owned.outcome(name: name)
        if case .failed(let error) = outcome { failure = failure ?? error }
        lock.unlock()
        outcome.announce(on: state)
    }
}
