import AsyncHTTPClient
import BlobStream
import Foundation
import NIOCore
import NIOHTTP1

/// The HEAD that follows a first GET answered 416 without the object's length: it tells
/// whether the offset asked for is the object's end (a clean end: an empty object, or a read
/// that starts at the length) or past it. Sent from the event loop that judged the GET, so
/// that the open completes without a reader.
struct LengthProbe: Sendable {
    let client: HTTPClient
    let url: URL
    /// How the source's requests are made: its name and its hook (for its own origin only).
    let requests: RangeRequests

    /// Sends the HEAD for the opening of `range` as `probe`; `onDone` gets its answer (not
    /// called when the probe is cancelled first). A request that cannot be made fails the
    /// probe at once, and `onDone` gets that failure.
    func start(
        _ probe: RangeFetch, range: ClosedRange<Int64>,
        onDone: @escaping @Sendable (Result<RangeAnswer, RangeFetch.RangeFailure>) -> Void
    ) {
        var request = HTTPRangeRequest(url: url, method: .HEAD, range: range)
        let prepared: HTTPClient.Request
        do {
            try requests.hook(for: url)?(&request)
            prepared = try HTTPClient.Request(url: request.url.absoluteString, method: .HEAD, headers: request.headers)
        } catch {
            let failure = BlobStreamError(
                .sourceFailed, "preparing HEAD \(requests.name) failed: \(error)", cause: error)
            onDone(.failure(.notSent(failure)))
            probe.fail(failure)
            return
        }
        probe.start(prepared, client: client, deadline: nil, onDone: onDone)
    }
}
