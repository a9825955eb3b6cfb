import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore
import NIOHTTP1

/// The first GET of an `HTTPRangeDataSource` (`Range: bytes=OFFSET-`) and what follows it on
/// the event loops, until the open can be announced: a redirect is followed (to at most
/// `maxRedirects` new locations, as `curl -L` does; later ranges go to the last one), a
/// failure that brought none of the object's bytes (a refused connection, a 5xx, no answer)
/// is sent again after the retry budget's wait, and a 416 without the object's length is
/// followed by a HEAD. `announce` gets the judged answer once.
struct FirstRequest: Sendable {
    let client: HTTPClient
    /// The source's sender: its requests, its shared state, its retry budget.
    let sender: RangeSender
    let judge: RangeJudgement
    let offset: Int64
    let blockSize: Int
    /// The body bytes held before the server is made to wait: the first block's size (a
    /// reader that jumps, or reads an index's head, takes no more of this answer).
    let held: Int
    /// The last byte asked for: nil for `bytes=OFFSET-` (the answer read on as long as the
    /// reader goes on), else the first answer is that range alone (an index object whose
    /// head and end are all a look-up may need from its start: nothing past the head is
    /// sent, and relayed, before the request is cancelled).
    var last: Int64? = nil
    let maxRedirects: Int
    let announce: @Sendable (Result<(RemoteObject, FirstAnswer), BlobStreamError>) -> Void

    var requests: RangeRequests { sender.requests }
    var shared: HTTPRangeDataSource.Shared { sender.shared }
    var budget: RetryBudget { sender.budget }

    /// The statuses of a redirect that a read follows.
    static let redirects: Set<UInt> = [301, 302, 303, 307, 308]

    /// Sends attempt `attempt` of the first GET to `url`, reached after `redirects` redirects.
    func send(to url: URL, attempt: Int = 1, redirects: Int = 0) {
        let request: HTTPClient.Request
        switch requests.make(url: url, from: offset, to: last, etag: nil) {
        case .failure(let error): return announce(.failure(error))
        case .success(let made): request = made
        }
        let stream = RangeStream(offset: offset, limit: held, wholeLimit: blockSize + 1)
        let stopped = shared.lock.withLock {
            shared.stream = stream
            shared.location = url
            return shared.isStopped
        }
        if stopped { return stream.cancel() }
        stream.start(request, client: client, origin: sender.timings) { result in
            answered(result, from: url, attempt: attempt, redirects: redirects)
        }
    }

    private func answered(
        _ result: Result<RangeAnswer, RangeFetch.RangeFailure>, from url: URL, attempt: Int, redirects: Int
    ) {
        if case .success(let answer) = result, Self.redirects.contains(answer.head.status.code),
            let location = answer.head.headers.first(name: "Location")
        {
            switch follow(location, from: url, redirects: redirects) {
            case .success(let next): return send(to: next, attempt: attempt, redirects: redirects + 1)
            case .failure(let error): return announce(.failure(error))
            }
        }
        if judge.needsLength(result) { return probe(url) }
        let judged = judge.opening(result, offset: offset, blockSize: blockSize)
        guard case .failure(let error) = judged else { return announce(judged) }
        guard let reason = RetryBudget.reason(result, judged: error),
            let wait = budget.wait(after: attempt, reason: reason)
        else {
            return announce(.failure(budget.gaveUp(error, at: offset, attempts: attempt)))
        }
        let nanoseconds = wait.components.seconds * 1_000_000_000 + wait.components.attoseconds / 1_000_000_000
        let retry = client.eventLoopGroup.next().scheduleTask(in: .nanoseconds(nanoseconds)) {
            send(to: url, attempt: attempt + 1, redirects: redirects)
        }
        let stopped = shared.lock.withLock {
            shared.retry = retry
            return shared.isStopped
        }
        if stopped { retry.cancel() }
    }

    /// The location a redirect from `url` points to, or why it is not followed.
    private func follow(_ location: String, from url: URL, redirects: Int) -> Result<URL, BlobStreamError> {
        guard redirects < maxRedirects else {
            return .failure(
                BlobStreamError(
                    .httpFailed,
                    "GET \(requests.name) failed: more than \(maxRedirects) redirects (the last from "
                        + "\(BlobURL.redactingPasswords(url.absoluteString)) to \(BlobURL.redactingPasswords(location)))"
                ))
        }
        guard let next = URL(string: location, relativeTo: url)?.absoluteURL,
            ["http", "https"].contains(next.scheme?.lowercased() ?? ""), next.host?.isEmpty == false
        else {
            return .failure(
                BlobStreamError(
                    .httpFailed,
                    "GET \(requests.name) failed: a redirect to '\(BlobURL.redactingPasswords(location))', not an http(s) URL"
                ))
        }
        // The source's credentials (a signature, an Authorization its hook adds) are made for
        // its own origin. A redirect elsewhere is followed only to a URL that carries its own
        // authorization (a presigned one), and then without them; any other is refused.
        if requests.dropsCredentials(for: next), !BlobURL.isPresigned(next) {
            return .failure(
                BlobStreamError(
                    .httpFailed,
                    "GET \(requests.name) failed: \(BlobURL.redactingPasswords(url.absoluteString)) redirects to "
                        + "\(BlobURL.redactingPasswords(next.absoluteString)), another origin (scheme, host, port), and the "
                        + "request's credentials are never sent there; read that URL directly if you trust it"))
        }
        return .success(next)
    }

    /// A 416 that does not tell the length (S3 on Swift): a HEAD tells whether this is the end.
    private func probe(_ url: URL) {
        let range = offset...(offset + Int64(blockSize) - 1)
        let probe = RangeFetch(range: range)
        let stopped = shared.lock.withLock {
            shared.fetches[ObjectIdentifier(probe)] = probe
            return shared.isStopped
        }
        if stopped { return probe.cancel() }
        let prober = LengthProbe(client: client, url: url, requests: requests)
        prober.start(probe, range: range) { [judge, announce] in announce(judge.probed($0, range: range)) }
    }
}
