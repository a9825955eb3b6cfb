import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore

/// How one `HTTPRangeDataSource` sends its GETs: the client (or why none could be made), its
/// event loops, the requests' maker, the retry budget every request shares, and the memory
/// the blocks are filled into. Every GET it sends is kept in `shared`, to be cancelled with
/// the others. Fixed at creation (`completionContext` may be asked from any thread).
struct RangeSender {
    /// How errors name the object.
    let name: String
    /// The URL read; the blocks go to `shared.location` once the first GET set it.
    let url: URL
    let shared: HTTPRangeDataSource.Shared
    let requests: RangeRequests
    /// The retries left (all the source's requests share them).
    let budget: RetryBudget
    /// The memory of the blocks, used again from block to block (the blocks in flight, the
    /// current one and one being let go).
    let memory: BlockMemory
    let client: HTTPClient?
    /// Why no client could be made (reported by `open()`).
    let configurationError: BlobStreamError?
    /// The client's event loops.
    let eventLoopGroup: (any EventLoopGroup)?
    /// The event loop of this source's block GETs: their answers are collected there, and
    /// the pool makes their connections there (kept alive from one block to the next). An
    /// answer collected on another loop than its connection's hands every body part across
    /// threads (about a tenth of a download's CPU).
    let blockLoop: (any EventLoop)?
    let minimumRate: HTTPMinimumRate?
    /// What this process measured of the URL's origin (its GETs' times to an answer): the
    /// hedge delay before the source measured ranges of its own.
    let timings: OriginTimings

    /// The sender of a source of `url` read with `options`: the caller's client, or one of
    /// the pool's (`configurationError` when none can be made).
    init(url: URL, options: HTTPRangeOptions, name: String, shared: HTTPRangeDataSource.Shared) {
        self.name = name
        self.url = url
        self.shared = shared
        self.requests = RangeRequests(name: name, prepare: options.prepare, origin: url)
        self.budget = RetryBudget(policy: options.retry)
        self.memory = BlockMemory(keep: max(options.readAhead, options.downloadReadAhead ?? 0) + 2)
        self.minimumRate = options.minimumRate
        self.timings = OriginTimings.of(url)
        var client = options.client
        var configurationError: BlobStreamError?
        if client == nil {
            do {
                client = try (options.pool ?? HTTPClientPool.shared(connection: options.connection)).client(for: url)
            } catch {
                configurationError = error
            }
        }
        self.client = client
        self.configurationError = configurationError
        self.eventLoopGroup = client?.eventLoopGroup
        self.blockLoop = client?.eventLoopGroup.next()
    }

    static func isEventLoop(of group: any EventLoopGroup) -> Bool {
        group.makeIterator().contains { $0.inEventLoop }
    }

    /// Prepares and sends the GET of one block, with `If-Match`, to the object's location.
    func start(_ fetch: RangeFetch, object: RemoteObject) {
        guard let client else { return fetch.cancel() }
        let location = shared.lock.withLock { shared.location } ?? url
        switch requests.make(url: location, from: fetch.range.lowerBound, to: fetch.range.upperBound, etag: object.etag)
        {
        case .failure(let error):
            fetch.fail(error)
        case .success(let prepared):
            if shared.register(fetch) { return fetch.cancel() }
            fetch.start(
                prepared, client: client, deadline: nil, memory: memory, on: blockLoop, minimumRate: minimumRate,
                origin: timings)
        }
    }

    /// Sends the GET of the object's last `count` bytes (without `If-Match`: the ETag is not
    /// known yet); the GET, nil when none was sent.
    func startSuffix(count: Int) -> RangeFetch? {
        guard let client, case .success(let request) = requests.makeSuffix(url: url, count: Int64(count)) else {
            return nil
        }
        let fetch = RangeFetch(range: 0...Int64(count) - 1)
        if shared.register(fetch) {
            fetch.cancel()
            return nil
        }
        fetch.start(
            request, client: client, deadline: nil, on: blockLoop, minimumRate: minimumRate, origin: timings)
        return fetch
    }

    func forget(_ fetch: RangeFetch) { shared.forget(fetch) }

    /// `.wouldDeadlock` when the calling thread is an event loop of the client, which must
    /// deliver the answer waited for.
    func deadlockCheck() -> BlobStreamError? {
        guard let group = eventLoopGroup, Self.isEventLoop(of: group) else { return nil }
        return BlobStreamError(
            .wouldDeadlock,
            "\(name): a read would wait on an event loop of its HTTP client for an answer that loop must deliver "
                + "(read on another thread)")
    }

    /// Waits `wait` before an attempt again; `.closed` when `close()` or `interrupt()` ends
    /// the wait, `.wouldDeadlock` on an event loop of the client.
    func pause(for wait: Duration) -> BlobStreamError? {
        if let error = deadlockCheck() { return error }
        let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
        let until = Date(timeIntervalSinceNow: seconds)
        let stopped = shared.lock.withLock {
            while !shared.isStopped, shared.lock.wait(until: until) {}
            return shared.isStopped
        }
        return stopped ? BlobStreamError(.closed, "\(name): closed while a read waited to ask again") : nil
    }
}

extension RangeSender {
    /// What `stream.take` gives, or `.wouldDeadlock` when it would wait on an event loop of
    /// the client.
    func take(from stream: RangeStream, into buffer: UnsafeMutablePointer<UInt8>?, maxLength: Int)
        -> Result<RangeStream.Taken, BlobStreamError>
    {
        if !stream.isReady, let error = deadlockCheck() { return .failure(error) }
        return .success(stream.take(buffer, maxLength: maxLength))
    }
}
