import BlobStream
import Foundation
import NIOCore

/// One source read through a synchronous `BlobInputStream` on a dispatch queue of its own,
/// so that its blocking reads never hold a thread of the cooperative pool; task
/// cancellation closes the stream, which wakes a read that waits (a pipe).
final class PartReader: @unchecked Sendable {
    // Unchecked Sendable: `stream` and `source` are used by one job on `queue` at a time;
    // the only call from elsewhere is `stream.close()`, which the stream allows from any
    // thread (contract rule 4).
    private let stream: BlobInputStream
    private let source: any BlobDataSource
    private let queue = DispatchQueue(label: "BlobStreamS3.PartReader")
    /// How messages name the source.
    let name: String

    /// What the source tells once open.
    struct Facts: Sendable {
        var length: Int64?
        var capability: BlobOffsetCapability
        var identity: String?
        /// The strong ETag of a remote object read by range (`BlobRangeReading`: an `s3://`
        /// or `https://` source), from its first answer, when it answers no `identity`: the
        /// version every later byte of that source is read from (`If-Match`), and which every
        /// source of one upload must read (`S3MultipartUpload.SourcePin`).
        var etag: String? = nil
    }

    /// Set on the queue of a reader of a part of the body (`init(source:name:part:)`): no
    /// read of its source is whole, so an `s3://` source read there asks for no checksum of
    /// the whole object (`S3Sources`: its `HEAD` would go unused).
    private static let readsPart = DispatchSpecificKey<Bool>()

    /// True on the queue of a reader of a part (its source's calls are made there).
    static var isReadingPart: Bool { DispatchQueue.getSpecific(key: readsPart) == true }

    /// A reader of `source`, named `name` in messages; `part`: it reads less than the whole
    /// body, or reads it again after a pass that was checked (see `isReadingPart`).
    init(source: any BlobDataSource, name: String, part: Bool = false) {
        self.source = source
        self.name = name
        stream = BlobInputStream(dataSource: source, mode: .synchronous)
        if part { queue.setSpecific(key: Self.readsPart, value: true) }
    }

    /// Opens the source (reading from `offset`), and returns what it tells.
    func open(at offset: Int64 = 0) async throws -> Facts {
        try await run { [self] () throws(BlobStreamError) -> Facts in
            if offset > 0 {
                do {
                    try stream.seek(to: offset)
                } catch {
                    throw BlobStreamError.s3(
                        .sourceFailed, "\(name): cannot start reading at offset \(offset)", cause: error)
                }
            }
            stream.open()
            if stream.streamStatus == .error || stream.streamStatus == .closed {
                throw BlobStreamError.s3(.sourceFailed, "cannot open \(name)", cause: stream.streamError)
            }
            let identity = stream.property(forKey: .blobContentIdentityKey) as? String
            var etag: String? = nil
            if identity == nil, let object = source as? any BlobRangeReading {
                // Waits for the first answer, which names the version read.
                do {
                    etag = try object.contentIdentity()?.entityTag
                } catch {
                    throw BlobStreamError.s3(Self.code(error), "cannot open \(name)", cause: error)
                }
            }
            return Facts(
                length: source.length, capability: source.offsetCapability, identity: identity, etag: etag)
        }
    }

    /// `.changed` for a source's error that says its object changed while read (a later
    /// GET's `If-Match` refused), else `.sourceFailed`.
    static func code(_ error: (any Error)?) -> BlobStreamError.Code {
        (error as? BlobStreamError)?.code == .changed ? .changed : .sourceFailed
    }

    /// Reads up to `count` bytes: fewer only at the source's end; into a buffer of `buffers`
    /// when given (read straight into it: no copy on the way).
    func read(upTo count: Int, buffers: PartBufferPool? = nil) async throws -> ByteBuffer {
        try await run { [self] () throws(BlobStreamError) -> ByteBuffer in
            var buffer = (buffers ?? PartBufferPool()).take(capacity: count)
            var total = 0
            while total < count {
                let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { raw -> Int in
                    let want = min(raw.count, count - total, 1 << 20)
                    guard want > 0 else { return 0 }
                    let got = stream.read(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: want)
                    return got > 0 ? got : 0
                }
                if n == 0 {
                    if stream.streamStatus == .error || stream.streamStatus == .closed {
                        throw BlobStreamError.s3(
                            Self.code(stream.streamError), "cannot read \(name) (at byte \(total) of a part)",
                            cause: stream.streamError)
                    }
                    break
                }
                total += n
            }
            return buffer
        }
    }

    /// Reads `count` bytes (fewer only at the source's end) through one buffer, and returns
    /// their digest as `plan` asks and how many there were: the first pass over a part too
    /// large for one buffer, nothing kept.
    func digest(count: Int, plan: DigestPlan) async throws -> (digest: PartDigest, bytes: Int) {
        try await run { [self] () throws(BlobStreamError) -> (digest: PartDigest, bytes: Int) in
            var digester = DigestPlan.Digester(plan)
            let chunk = 4 << 20
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 64)
            defer { buffer.deallocate() }
            var total = 0
            while total < count {
                let got = stream.read(
                    buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: min(chunk, count - total))
                if got <= 0 {
                    if got < 0 || stream.streamStatus == .error || stream.streamStatus == .closed {
                        throw BlobStreamError.s3(
                            Self.code(stream.streamError), "cannot read \(name) (at byte \(total) of a part)",
                            cause: stream.streamError)
                    }
                    break
                }
                digester.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
                total += got
            }
            return (digester.finish(), total)
        }
    }

    /// `body`'s result with the source, on the queue its calls are made on.
    func withSource<T: Sendable>(_ body: @escaping @Sendable (any BlobDataSource) -> T) async throws -> T {
        try await run { [self] () throws(BlobStreamError) -> T in body(source) }
    }

    /// Closes the stream (and its source).
    func close() { stream.close() }

    private func run<T: Sendable>(_ work: @escaping @Sendable () throws(BlobStreamError) -> T) async throws -> T {
        try await withTaskCancellationHandler {
            let value: T
            do {
                value = try await withCheckedThrowingContinuation { continuation in
                    queue.async {
                        do {
                            continuation.resume(returning: try work())
                        } catch {
                            continuation.resume(throwing: error)
                        }
                    }
                }
            } catch {
                // A read ended by the cancellation's `close()` fails: that is the cancellation.
                try Task.checkCancellation()
                throw error
            }
            try Task.checkCancellation()
            return value
        } onCancel: { [self] in
            close()
        }
    }
}
