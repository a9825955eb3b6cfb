import BlobStream
import BlobStreamArchive
import BlobStreamCompression
import BlobStreamUpload
import Foundation

/// An index built from an upload's bytes in the same pass, kept beside the object once the
/// upload is complete: write once, read any member.
///
/// Give the upload `body` instead of the one you had. A body read once (a pipe) feeds the
/// index as the uploader reads it (`UploadBody.observed(by:)`: the bytes are read once, for
/// both). A repeatable body (a file, whose parts a multipart upload reads at their offsets,
/// in parallel) is read once more from its start, in order, beside the upload. The format is
/// told from the bytes (`IndexSink`). When the upload has ended whole, `finish(objectAt:sources:at:)`
/// binds the index to the stored object's size and strong ETag (one small request for them)
/// and writes it beside the object, as `blobstream index s3://…` would have. An upload that
/// failed or was cancelled calls `cancel()`: no index object is written.
///
/// ```swift
/// let indexing = UploadIndexing(body: body, name: "s3://photos/2026.tar.gz")
/// let result = try await S3Uploader(client: client).upload(indexing.body, to: location).result
/// let kept = try await indexing.finish(objectAt: "s3://photos/2026.tar.gz", sources: BlobSources(remote: StoreSchemes()))
/// ```
public final class UploadIndexing: Sendable {
    /// What `finish(objectAt:sources:at:)` did.
    public enum Outcome: Sendable, Equatable {
        /// The index objects written.
        case kept([BlobSources.KeptIndex])
        /// No index: the bytes are no format an index is built from in one pass, or the body
        /// was not read in order; why.
        case notIndexed(reason: String)
    }

    /// The body to upload in place of the one given.
    public let body: UploadBody
    private let sink: IndexSink
    private let observer: SinkObserver
    /// Whether the body is read beside the upload (a repeatable body) rather than observed.
    private let readsBeside: Bool
    private let sideReadDone = DispatchSemaphore(value: 0)

    /// Indexes the bytes of `body` as it is uploaded; `name` names them in messages.
    ///
    /// - Parameters:
    ///   - body: the body the upload would have sent.
    ///   - name: how errors name the bytes (the object's URL).
    ///   - spacing: the least uncompressed distance between gzip seek points.
    ///   - engine: the inflater of a gzip layer.
    public init(
        body: UploadBody, name: String, spacing: Int = GzipIndex.defaultSpacing, engine: InflateEngine = .automatic
    ) {
        let sink = IndexSink(name: name, spacing: spacing, engine: engine)
        let observer = SinkObserver(sink: sink)
        self.sink = sink
        self.observer = observer
        guard body.isRepeatable else {
            self.body = body.observed(by: observer)
            readsBeside = false
            return
        }
        self.body = body
        let done = sideReadDone
        let thread = Thread {
            SideReading.feed(sink, from: body, observer: observer)
            done.signal()
        }
        thread.name = "BlobStream.UploadIndexing"
        readsBeside = true
        thread.start()
    }

    /// After the upload of `body` ended whole as the object at `url`: binds the index to
    /// the object (its size and strong ETag, asked for with one small request) and writes it
    /// with `sources.keep(_:of:serverOrigin:at:)`: beside the object, at `destination`, or
    /// into `sources.indexCache`.
    ///
    /// Give `stored`, the upload's own result, whenever you have it: the index is then bound
    /// only to the object that upload stored. Another writer's object put at the same key
    /// after the upload (even of the same size) has another ETag than the upload's answer
    /// gave, and no index is written for it; without `stored`, the index is bound to whatever
    /// object is at `url` when `finish` asks.
    ///
    /// - Throws: `BlobStreamError`: the index's build error (naming the offset); `.changed`
    ///   when the stored object is not the bytes indexed (another size, or another ETag than
    ///   the upload's answer gave); the store's refusal.
    public func finish(
        objectAt url: String, stored: UploadResult? = nil, sources: BlobSources, at destination: String? = nil
    ) async throws(BlobStreamError) -> Outcome {
        if readsBeside { await Self.wait(sideReadDone) }
        if let why = observer.lost {
            sink.cancel()
            return .notIndexed(reason: "\(url): no index: \(why)")
        }
        let (identity, origin) = try await RemoteContent.offThread { () throws(BlobStreamError) in
            try RemoteContent.identity(of: url, registry: sources.makeRegistry())
        }
        if let uploaded = stored?.entityTag, let now = identity.entityTag,
            Self.unquoted(now) != Self.unquoted(uploaded)
        {
            sink.cancel()
            throw BlobStreamError(
                .changed,
                "\(url) is no longer the object this upload stored (ETag \(now), the upload's answer gave \(uploaded)): another writer replaced it, and its index is not written"
            )
        }
        let built: BlobSources.BuiltIndex
        switch try sink.finish(identity: identity) {
        case .none(let reason): return .notIndexed(reason: reason)
        case .archive(let index): built = .archive(index)
        case .gzip(let index): built = .gzip(index)
        case .zstd(let index): built = .zstd(index)
        }
        return .kept(try await sources.keep(built, of: url, serverOrigin: origin, at: destination))
    }

    /// An entity tag without its quotes (`W/` left as it is).
    private static func unquoted(_ tag: String) -> Substring {
        tag.count >= 2 && tag.hasPrefix("\"") && tag.hasSuffix("\"") ? tag.dropFirst().dropLast() : Substring(tag)
    }

    /// The upload failed or was cancelled: the index is dropped, nothing is written.
    public func cancel() {
        observer.lostOrder("the upload did not end whole")
        sink.cancel()
    }

    private static func wait(_ semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                semaphore.wait()
                semaphore.signal()
                continuation.resume()
            }.start()
        }
    }
}

/// Feeds an `IndexSink` what an upload reads, and remembers why not when it cannot.
final class SinkObserver: UploadBodyObserver, Sendable {
    let sink: IndexSink
    /// Why the index was lost, the first reason given.
    private let why = Locked<String?>(nil)

    init(sink: IndexSink) { self.sink = sink }

    var lost: String? { why.withLock { $0 } }

    func observe(_ bytes: UnsafeRawBufferPointer) { sink.consume(bytes) }

    func lostOrder(_ why: String) {
        self.why.withLock { first in if first == nil { first = why } }
        sink.cancel()
    }
}

/// The reading of a repeatable body beside its upload, from its start, in order.
enum SideReading {
    static func feed(_ sink: IndexSink, from body: UploadBody, observer: SinkObserver) {
        let source: any BlobDataSource
        do {
            source = try body.makeSource()
        } catch {
            observer.lostOrder("the body could not be read for its index: \(error)")
            return
        }
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        defer { stream.close() }
        let capacity = 1 << 20
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        while observer.lost == nil {
            let n = stream.read(buffer, maxLength: capacity)
            if n > 0 {
                sink.consume(UnsafeRawBufferPointer(start: buffer, count: n))
            } else {
                if n < 0 {
                    let why = String(describing: stream.streamError)
                    observer.lostOrder("the body could not be read for its index: \(why)")
                }
                return
            }
        }
    }
}

extension RemoteContent {
    /// The identity of the object at `url` (its size and strong ETag) and the server that
    /// answered, from one small request.
    static func identity(of url: String, registry: DataSourceRegistry) throws(BlobStreamError)
        -> (BlobContentIdentity, String?)
    {
        let object = try rangedSource(url, registry: registry)
        defer { object.close() }
        object.expectRead(0..<1)
        object.open()
        guard let identity = try object.contentIdentity() else {
            throw BlobStreamError(.unsupported, "\(url): the store sends no strong ETag: no index is written")
        }
        return (identity, object.serverOrigin)
    }

    /// Runs blocking `work` on a thread of its own.
    static func offThread<T: Sendable>(_ work: @escaping @Sendable () throws(BlobStreamError) -> T)
        async throws(BlobStreamError) -> T
    {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<T, BlobStreamError>, Never>) in
            Thread {
                do throws(BlobStreamError) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }.start()
        }
        return try result.get()
    }
}
