import BlobStream
import BlobStreamArchive
import BlobStreamCompression
import BlobStreamFiles
import BlobStreamZstd
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Builds the index that a stream of bytes calls for while the bytes pass by on their way
/// elsewhere (an upload from a pipe): the same builders `blobstream index` runs, fed the
/// bytes in order instead of pulling them from a source.
///
/// The format is told from the first bytes, never from a name: gzip's magic (a member index
/// with its gzip seek points when the gzip stream holds a tar, else the gzip seek points
/// alone), zstd's (a member index with its frames when the stream holds a tar, else a frame
/// index when it is in many frames), a ustar header at offset 257 (a plain tar), or a zip's
/// local header (its member index: the local headers and the central directory, which comes
/// last, are kept as they pass; see `ArchiveIndex.buildZip(streamedFrom:name:)`). Other bytes
/// get no index, and `finish(identity:)` says why.
///
/// The builder runs on a thread of its own, fed through a socket pair of about 1 MiB:
/// `consume(_:)` waits while the builder is that far behind, so the memory held is that
/// buffer and the index in progress (a gzip index's windows: about 8 MiB per GiB at the
/// default spacing). A builder that fails stops taking bytes; `consume(_:)` goes on (the
/// bytes' own journey is not the index's business) and `finish(identity:)` throws its error.
///
/// ```swift
/// let sink = IndexSink(name: "s3://photos/photos.tar.gz")
/// for part in parts { part.withUnsafeBytes { sink.consume($0) } }
/// let built = try sink.finish(identity: stored)  // the object's size and ETag
/// ```
///
/// Feed it from one thread at a time, in order. `cancel()` may come from any thread.
public final class IndexSink: Sendable {
    /// What the bytes gave.
    public enum Built: Sendable {
        /// A member index: a tar, or a tar.gz with its gzip seek points inside
        /// (`ArchiveIndex.gzipIndex`).
        case archive(ArchiveIndex)
        /// The seek points of a gzip stream that holds no tar.
        case gzip(GzipIndex)
        /// The frames of a zstd stream in many frames that holds no tar.
        case zstd(ZstdFrameIndex)
        /// No index: the bytes are not a format a builder takes from a stream, and why.
        case none(reason: String)
    }

    /// How many leading bytes are held to tell the format (fewer when the stream is shorter).
    static let sniffLength = 64 << 10

    private let name: String
    private let spacing: Int
    private let engine: InflateEngine
    private let state = Locked(State())
    private let done = DispatchSemaphore(value: 0)

    /// What the feeding, the builder and `cancel()` share.
    private struct State {
        /// The bytes held until the format is told.
        var prefix: [UInt8] = []
        var started = false
        /// The socket the bytes go into (-1: none, or closed).
        var feed: Int32 = -1
        var fed: Int64 = 0
        var result: Result<Built, BlobStreamError>?
        var running = false
        var ended = false

        /// Closes the socket the bytes go into: the builder sees the end.
        mutating func closeFeed() {
            guard feed >= 0 else { return }
            _ = shutdown(feed, Int32(SHUT_WR))
            _ = close(feed)
            feed = -1
        }
    }

    /// A sink for the bytes of `name` (how errors name them).
    ///
    /// - Parameters:
    ///   - name: how errors name the bytes (the object's URL).
    ///   - spacing: the least uncompressed distance between gzip seek points.
    ///   - engine: the inflater of a gzip layer (ISA-L when it loads, by default).
    public init(name: String, spacing: Int = GzipIndex.defaultSpacing, engine: InflateEngine = .automatic) {
        self.name = name
        self.spacing = spacing
        self.engine = engine
    }

    deinit { cancel() }

    /// The next bytes, in order. Waits while the builder is about 1 MiB behind.
    public func consume(_ bytes: UnsafeRawBufferPointer) {
        let (enough, socket) = state.withLock { s -> (Bool, Int32) in
            guard !s.ended else { return (false, -1) }
            s.fed += Int64(bytes.count)
            if !s.started {
                s.prefix.append(contentsOf: bytes)
                return (s.prefix.count >= Self.sniffLength, -1)
            }
            return (false, s.feed)
        }
        if enough { start() }
        if socket >= 0 { send(bytes, to: socket) }
    }

    /// Ends the stream and waits for the builder: the index, bound to `identity` (the size and
    /// strong ETag of the object the bytes became, or a file's identity).
    ///
    /// - Throws: the builder's error (`.corrupt`, `.truncated`, naming the stream and the
    ///   offset); `.changed` when `identity` is not of the bytes fed (another size);
    ///   `.closed` after `cancel()`.
    public func finish(identity: BlobContentIdentity) throws(BlobStreamError) -> Built {
        let needsStart = state.withLock { s in !s.started && !s.ended }
        if needsStart { start() }
        let outcome = endAndWait()
        let total = state.withLock { s in s.fed }
        switch try outcome.get() {
        case .none(let reason): return .none(reason: reason)
        case .archive(var index):
            try check(index.identity.size, total, identity)
            index.bind(to: identity)
            return .archive(index)
        case .gzip(var index):
            try check(index.compressedSize, total, identity)
            index.identity = identity
            return .gzip(index)
        case .zstd(let index):
            try check(index.frames.compressedLength <= total ? total : index.frames.compressedLength, total, identity)
            return .zstd(ZstdFrameIndex(frames: index.frames, identity: identity))
        }
    }

    /// Stops the builder; what it built is dropped. Safe from any thread, and more than once.
    public func cancel() {
        let wasRunning = state.withLock { s in
            let wasRunning = s.running && s.result == nil
            if !s.ended {
                s.ended = true
                s.closeFeed()
            }
            return wasRunning
        }
        if wasRunning {
            done.wait()
            done.signal()
        }
    }

    private func check(_ indexed: Int64, _ total: Int64, _ identity: BlobContentIdentity) throws(BlobStreamError) {
        guard indexed == total, total == identity.size else {
            throw BlobStreamError(
                .changed,
                "\(name): the index was built from \(total) bytes (it describes \(indexed)), the object has \(identity.size)"
            )
        }
    }

    /// Tells the format from the bytes held, starts its builder and hands it those bytes.
    private func start() {
        let held = state.withLock { s -> [UInt8]? in
            guard !s.started, !s.ended else { return nil }
            s.started = true
            let held = s.prefix
            s.prefix = []
            return held
        }
        guard let held else { return }
        let chosen: Builder
        switch builder(for: held) {
        case .failure(let reason):
            state.withLock { s in s.result = .success(.none(reason: reason.message)) }
            return
        case .success(let builder): chosen = builder
        }
        guard let (ours, theirs) = Self.socketPair() else {
            state.withLock { s in
                s.result = .failure(BlobStreamError(.ioFailed, "\(name): cannot make a socket pair to feed the index"))
            }
            return
        }
        let handle = FileHandle(fileDescriptor: theirs, closeOnDealloc: false)
        // Handed to the builder thread, which alone uses it from then on.
        nonisolated(unsafe) let source = FileHandleDataSource(fileHandle: handle, closeOnClose: true)
        state.withLock { s in
            s.feed = ours
            s.running = true
        }
        let thread = Thread { [self] in
            let built = run(chosen, over: source)
            source.close()
            state.withLock { s in
                s.result = built
                s.closeFeed() // a builder that stopped early takes no more bytes
            }
            done.signal()
        }
        thread.name = "BlobStream.IndexSink"
        thread.start()
        held.withUnsafeBytes { send($0, to: ours) }
    }

    /// The builders a stream can be fed to.
    private enum Builder {
        case gzip, tar, zstd, zip
    }

    /// The builder the format of `bytes` takes (`ContentMagic`), or why none does.
    private func builder(for bytes: [UInt8]) -> Result<Builder, BlobStreamError> {
        let why: String
        switch ContentMagic(head: bytes) {
        case .gzip: return .success(.gzip)
        case .zstd: return .success(.zstd)
        case .tar: return .success(.tar)
        case .zip: return .success(.zip)
        case .xz: why = "xz: a tar.xz's member index is built from a file only"
        case .unknown:
            why =
                "the bytes are neither gzip (no 1f 8b at their start), zstd (no 28 b5 2f fd) nor a tar (no ustar header at offset 257)"
        }
        return .failure(BlobStreamError(.unsupported, "\(name): no index: \(why)"))
    }

    /// Runs `builder` over `source` to its end.
    private func run(_ builder: Builder, over source: any BlobDataSource) -> Result<Built, BlobStreamError> {
        do {
            switch builder {
            case .gzip:
                switch try ArchiveIndex.buildGzip(streamedFrom: source, name: name, spacing: spacing, engine: engine) {
                case .archive(let index): return .success(.archive(index))
                case .gzip(let index): return .success(.gzip(index))
                }
            case .tar:
                return .success(.archive(try ArchiveIndex.buildTar(streamedFrom: source, name: name)))
            case .zip:
                do throws(BlobStreamError) {
                    return .success(.archive(try ArchiveIndex.buildZip(streamedFrom: source, name: name)))
                } catch  where error.code == .unsupported {
                    // No central directory, or one too large to keep: no index, and why.
                    return .success(.none(reason: "\(name): no index: \(error.message)"))
                }
            case .zstd:
                switch try ArchiveIndex.buildZstd(streamedFrom: source, name: name) {
                case .archive(let index): return .success(.archive(index))
                case .frames(let table) where table.frames.filter({ $0.decompressedSize > 0 }).count < 2:
                    return .success(
                        .none(
                            reason:
                                "\(name): no index: it is one zstd frame, which cannot be entered midway (ZstdSeekableCompressor writes frames, and a seek table that needs no index)"
                        ))
                case .frames(let table):
                    let placeholder = BlobContentIdentity(
                        size: table.compressedLength, modified: .init(seconds: 0, nanoseconds: 0), sampleCRC32s: [])
                    return .success(.zstd(ZstdFrameIndex(frames: table, identity: placeholder)))
                }
            }
        } catch {
            return .failure(error)
        }
    }

    /// Ends the feed and waits for the builder's answer.
    private func endAndWait() -> Result<Built, BlobStreamError> {
        let wait = state.withLock { s -> Bool? in
            if s.ended, s.result == nil, !s.running { return nil }
            s.closeFeed()
            return s.running && s.result == nil
        }
        guard let wait else {
            return .failure(BlobStreamError(.closed, "\(name): the index was cancelled"))
        }
        if wait {
            done.wait()
            done.signal()
        }
        return state.withLock { s in
            s.ended = true
            return s.result ?? .failure(BlobStreamError(.closed, "\(name): the index was cancelled"))
        }
    }

    /// Writes all of `bytes` to `socket`; a builder gone (the peer closed) ends it quietly.
    private func send(_ bytes: UnsafeRawBufferPointer, to socket: Int32) {
        guard var next = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let n = Glibc.send(socket, next, left, Int32(MSG_NOSIGNAL))
            if n < 0 {
                if errno == EINTR { continue }
                return // EPIPE, ECONNRESET, EBADF after a cancel: the builder takes no more
            }
            next += n
            left -= n
        }
    }

    /// A connected pair of local stream sockets (close-on-exec), their buffers 1 MiB.
    private static func socketPair() -> (Int32, Int32)? {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            return nil
        }
        var size: Int32 = 1 << 20
        _ = setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        return (fds[0], fds[1])
    }
}
