import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// A data source that reads an `http://` or `https://` URL by ranged GETs, so that every
/// composition works remotely (`gzip:https://…/x.gz`, `archive:http://…/x.tar!/member`).
///
/// ```swift
/// let source = HTTPRangeDataSource(url: URL(string: "https://example.com/photos.tar")!)
/// let stream = BlobInputStream(dataSource: source)
/// try stream.seek(to: 1 << 20)
/// stream.open()
/// ```
///
/// - `open()` sends the first GET (`Range: bytes=OFFSET-`, to the end) and returns at once;
///   the head of its answer gives the length (`Content-Range`) and the ETag. It completes
///   on an event loop of the client (`completionContext` says so): a stream never waits for
///   it there.
/// - With a strong ETag, reads are served from blocks of `options.blockSize` bytes: the
///   first from the first answer (whose request then ends), each later one by a GET that
///   carries `If-Match: <ETag>` and whose `Content-Range` and ETag are checked (an object
///   replaced while read fails with `.changed`, never with spliced bytes). The blocks after
///   the one handed out are asked for at once (`options.readAhead` of them, 3 by default:
///   with the block being read, `options.parallelism` GETs in flight), and handed out in
///   order; the memory held is about `blockSize × parallelism`. A `read` whose block has
///   not arrived yet waits for it (bounded by the idle timeout); called on an event loop of
///   the client, it fails at once with `.wouldDeadlock` instead.
/// - Retries (`options.retry`, see `HTTPRetryPolicy`): a block whose GET fails (a cut or
///   refused connection, a 5xx, a timeout) is asked again for the same bytes, with
///   `If-Match`, after a jittered backoff; the bytes of a failed answer are never handed
///   out. The first GET is sent again only while it brought none of the object's bytes.
/// - Redirects (301, 302, 303, 307, 308) of the first GET are followed, at most
///   `options.maxRedirects` (5); the blocks after it go to the last location, under its ETag.
///   The `prepare` hook (credentials, a signer) runs only for requests to the URL's own origin
///   (scheme, host, port): with a hook, a redirect to another origin is followed only to a
///   presigned URL (`X-Amz-Signature`), without the hook, and any other is refused with an
///   error that names the location. A password in the URL is never printed (`name`).
/// - Without a strong ETag (a weak one, only Last-Modified, none), no second request could
///   tell whether the file changed since the first, so every byte comes from the first
///   answer, read as it arrives (at most `options.blockSize` bytes held), and
///   `offsetCapability` becomes `.readAndDiscard`: a forward move drops the bytes before
///   the offset; a move back (or past what the answer holds) fails the next read with
///   `.offsetUnsupported`, naming the URL and the missing validator. A move before
///   `open()` is free (the first GET starts there). A reader that stops taking bytes for
///   longer than the idle timeout ends that answer (`.truncated`).
/// - A first GET at the object's end answered 416 (an empty object, or a read that starts
///   at the length) is a clean end: the length comes from `Content-Range: bytes */TOTAL`,
///   or, where the 416 lacks it (S3 on OpenStack Swift), from a HEAD. An offset past the
///   length is `.invalidOffset`; a 416 for an offset below the length is an error, never an end.
/// - A server that ignores `Range` (200 with the whole object) is accepted while the whole
///   object fits in the block asked for; beyond that it is an error (`.unsupported`), not a
///   download of the whole object per block.
/// - Errors name the URL: `.notFound` (404, 410), `.permissionDenied` (401, 403),
///   `.httpFailed` (other statuses), `.truncated` (a body cut short: the offset where it
///   ended), `.changed`, `.timedOut` (connect or idle limit), `.ioFailed` (a refused
///   connection, TLS), `.invalidOffset` (an offset past the end).
/// - Offsets: `.seek` (a GET at the new offset; `.readAndDiscard` without a strong ETag, see
///   above), and `length` is known once open.
/// - `close()` and `interrupt()` end a waiting read (`.closed`, a wait before a retry too)
///   and cancel the GETs in flight; `close()` also shuts down the client the source made
///   (never the caller's `options.client`, nor a client of `options.pool`).
///
/// Each request passes through `options.prepare` (after the `Range` and conditional headers
/// are set), where a signer such as SigV4 adds its headers.
public final class HTTPRangeDataSource: BlobDataSource {
    /// The observable state.
    public let state = BlobDataSourceState()
    /// The URL read.
    public let url: URL
    /// How it reads.
    public let options: HTTPRangeOptions

    // The front: the public API and the wiring. What the reading thread owns (a source is read
    // from one thread at a time) is in `plan`, `pipeline` and `answers`, each with the logic
    // over its own state; what the event loops and `interrupt()` share with it is in
    // `shared`, under its lock.
    let name: String
    let shared: Shared
    /// The client, its event loops, the retry budget and the blocks' memory.
    let sender: RangeSender
    /// What is asked for next: block sizes, read-ahead, the planned end.
    var plan: RangePlan
    /// The blocks: the one in hand, those read ahead, the object's end asked for at open.
    var pipeline: BlockPipeline
    /// The first answer and the object it pins, which every answer is judged against.
    var answers: AnswerState
    var position: Int64 = 0
    var opened = false, closed = false
    /// The check of a read whole from the first byte (`options.wholeObjectCheck`).
    var wholeCheck = WholeCheckState.notStarted

    /// Makes a source for `url` (`http` or `https`); nothing is sent until `open()`. A
    /// client that cannot be configured (an unreadable CA bundle) fails the open.
    ///
    /// - Parameters:
    ///   - url: the file's `http` or `https` URL.
    ///   - options: block size, read-ahead and connection options.
    ///   - name: how errors name the object (`s3://bucket/key` for a source that
    ///     reads an S3 object through its endpoint URL); nil: the URL.
    public init(url: URL, options: HTTPRangeOptions = HTTPRangeOptions(), name: String? = nil) {
        self.url = url
        self.options = options
        self.name = name ?? BlobURL.redactingPasswords(url.absoluteString)
        let judge = RangeJudgement(url: self.name, connection: options.connection)
        self.shared = Shared()
        self.sender = RangeSender(url: url, options: options, name: self.name, shared: shared)
        self.plan = RangePlan(options: options)
        self.pipeline = BlockPipeline(sender: sender, judge: judge, hedging: options.hedging)
        self.answers = AnswerState(judge: judge)
    }

    deinit {
        cancelAll()
    }

    /// The object's length, known once open (nil before).
    public var length: Int64? { shared.lock.withLock { shared.length } }

    /// `.seek` (a GET at the offset), or `.readAndDiscard` once the first answer came
    /// without a strong ETag (every byte then comes from that answer).
    public var offsetCapability: BlobOffsetCapability {
        shared.lock.withLock {
            guard case .success(let (object, .streamed))? = shared.opening, object.etag == nil else { return .seek }
            return .readAndDiscard
        }
    }

    /// The event loops of the client: the first answer is announced there.
    public var completionContext: BlobCompletionContext {
        guard let group = sender.eventLoopGroup else { return .caller }
        return .custom { RangeSender.isEventLoop(of: group) }
    }

    /// Sends the first GET; its answer (on an event loop) announces `isOpenCompleted` and
    /// `hasBytesAvailable` or `isAtEnd`, or sets `state.error`.
    public func open() {
        guard !opened, !closed else { return }
        opened = true
        guard ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false else {
            fail(BlobStreamError(.malformedURL, "'\(name)' is not an http:// or https:// URL with a host"))
            return
        }
        if let configurationError = sender.configurationError {
            fail(configurationError)
            return
        }
        guard let client = sender.client else { return }
        answers.awaitingFirst = true
        let (offset, state, shared) = (position, self.state, self.shared)
        // Once: the first GET's answer, or its hedge's (`HTTPRangeDataSource+FirstHedge`),
        // whichever comes first; the other GET is then cancelled.
        let settle: @Sendable (Result<(RemoteObject, FirstAnswer), BlobStreamError>, RangeFetch?) -> Void = {
            judged, winner in
            let losers = shared.lock.withLock { () -> (stream: RangeStream?, hedges: [RangeFetch])? in
                guard shared.opening == nil else { return nil }
                shared.opening = judged
                if case .success(let (object, _)) = judged { shared.length = object.length }
                shared.lock.broadcast()
                let hedges = shared.firstHedges.filter { $0 !== winner }
                shared.firstHedges = []
                guard winner != nil else { return (nil, hedges) }
                // A hedge won: the first GET (or its next attempt) ends.
                defer { (shared.stream, shared.retry) = (nil, nil) }
                shared.retry?.cancel()
                return (shared.stream, hedges)
            }
            guard let losers else { return }
            losers.stream?.cancel()
            for hedge in losers.hedges { hedge.cancel() }
            switch judged {
            case .success(let (object, _)):
                state.isOpenCompleted = true
                if offset >= object.length { state.isAtEnd = true } else { state.hasBytesAvailable = true }
            case .failure(let error):
                state.error = error
            }
        }
        let announce: @Sendable (Result<(RemoteObject, FirstAnswer), BlobStreamError>) -> Void = { settle($0, nil) }
        var first = FirstRequest(
            client: client, sender: sender, judge: answers.judge,
            offset: offset, blockSize: options.blockSize, held: plan.firstBlock, maxRedirects: options.maxRedirects,
            announce: announce)
        // The first answer's bytes named (`expectRead(_:)` before `open()`: an index's head,
        // an object's first bytes): the first GET asks for them alone. Open-ended, it went on
        // sending (megabytes relayed) until cancelled, beside the requests the reader made.
        if plan.firstRangeExpected { first.last = offset + Int64(plan.firstBlock) - 1 }
        first.send(to: url)
        hedgeFirstRequest(client: client, offset: offset, held: plan.firstBlock, settle: settle)
        pipeline.end.start(sender)
    }

    /// Copies bytes of the current block; waits for the next block when this one is used
    /// up (never on an event loop of the client: `.wouldDeadlock`).
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if state.error != nil { return -1 }
        guard opened, !closed, !shared.lock.withLock({ shared.interrupted }) else {
            return fail(BlobStreamError(closed || opened ? .closed : .notOpen, "\(name): the source is not open"))
        }
        if answers.object == nil, let error = takeOpening() { return fail(error) }
        guard let object = answers.object else { return -1 }
        if position >= object.length {
            state.isAtEnd = true
            return 0
        }
        if answers.streamed != nil { return readStreamed(buffer, maxLength: maxLength, of: object) }
        let block: RangeBlock
        switch pipeline.block(at: position, of: object, plan: &plan) {
        case .success(let holding): block = holding
        case .failure(let error): return fail(error)
        }
        let from = Int(position - block.start)
        let n = min(maxLength, block.bytes.count - from)
        buffer.update(from: block.bytes.start + from, count: n)
        if let error = checkWhole(UnsafeRawBufferPointer(start: buffer, count: n), at: position, of: object) {
            return fail(error)
        }
        position += Int64(n)
        if position == object.length { state.isAtEnd = true }
        return n
    }

    /// Lends the rest of the block that holds the next byte instead of copying it (waiting
    /// for that block as `read` does): the bytes are consumed and stay valid until the next
    /// call on the source, so a pump that writes what it is lent (`blobstream cat` into a
    /// pipe) moves each byte once after it arrived. False, consuming nothing, where `read`
    /// has the answer: at the end, after an error (then set, as `read` would), before `open`,
    /// and for a first answer read as it arrives (no strong ETag: `read` copies it).
    public func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>
    ) -> Bool {
        guard state.error == nil, opened, !closed, !shared.lock.withLock({ shared.interrupted }) else { return false }
        if answers.object == nil, let error = takeOpening() {
            fail(error)
            return false
        }
        guard answers.streamed == nil, let object = answers.object, position < object.length else { return false }
        let block: RangeBlock
        switch pipeline.block(at: position, of: object, plan: &plan) {
        case .success(let holding): block = holding
        case .failure(let error):
            fail(error)
            return false
        }
        let from = Int(position - block.start)
        let lent = UnsafeRawBufferPointer(start: block.bytes.start + from, count: block.bytes.count - from)
        if let error = checkWhole(lent, at: position, of: object) {
            fail(error)
            return false
        }
        buffer.pointee = block.bytes.start + from
        length.pointee = block.bytes.count - from
        position = block.end
        if position == object.length { state.isAtEnd = true }
        return true
    }

    func forget(_ fetch: RangeFetch) { sender.forget(fetch) }

    /// `.wouldDeadlock` when the calling thread is an event loop of the client, which must
    /// deliver the answer waited for.
    func deadlockCheck() -> BlobStreamError? { sender.deadlockCheck() }

    @discardableResult
    func fail(_ error: BlobStreamError) -> Int {
        state.error = error
        cancelAll()
        return -1
    }

    func cancelAll() { shared.stopAll() }
}
