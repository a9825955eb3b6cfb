import AsyncHTTPClient
import BlobStream
import Foundation
import NIOHTTP1

/// Makes the GETs of one source: the `Range` header, `If-Match` when the strong ETag is
/// known, then the caller's `prepare` hook (a signer) for requests to the source's own
/// origin only. Sendable, so that the event loops that send the first GET again (a retry, a
/// redirect) make it the same way.
struct RangeRequests: Sendable {
    /// How errors name the object.
    let name: String
    /// The caller's hook.
    let prepare: HTTPRangeOptions.Prepare?
    /// The source's own URL: the hook's credentials are made for its origin (scheme, host,
    /// port), and a request that goes anywhere else is sent without them.
    let origin: URL

    /// The hook for a request to `url`: the caller's for the source's own origin, none for
    /// another (a redirect elsewhere never carries the source's credentials).
    func hook(for url: URL) -> HTTPRangeOptions.Prepare? {
        BlobURL.isSameOrigin(url, origin) ? prepare : nil
    }

    /// Whether a request to `url` would leave credentials behind: the source has a hook and
    /// `url` is of another origin.
    func dropsCredentials(for url: URL) -> Bool { prepare != nil && !BlobURL.isSameOrigin(url, origin) }

    /// A GET of the bytes `first`…`last` (nil: to the end) of `url`, with `If-Match` when
    /// `etag` is given, through `prepare`.
    func make(url: URL, from first: Int64, to last: Int64?, etag: String?) -> Result<
        HTTPClient.Request, BlobStreamError
    > {
        var request = HTTPRangeRequest(url: url, range: first...(last ?? HTTPRangeRequest.toEnd))
        request.headers.add(name: "Range", value: "bytes=\(first)-" + (last.map { String($0) } ?? ""))
        if let etag { request.headers.add(name: "If-Match", value: etag) }
        return prepared(request)
    }

    /// A GET of the last `count` bytes of `url` (`Range: bytes=-COUNT`), through `prepare`.
    func makeSuffix(url: URL, count: Int64) -> Result<HTTPClient.Request, BlobStreamError> {
        var request = HTTPRangeRequest(url: url, range: 0...count - 1)
        request.suffixLength = count
        request.headers.add(name: "Range", value: "bytes=-\(count)")
        return prepared(request)
    }

    private func prepared(_ request: HTTPRangeRequest) -> Result<HTTPClient.Request, BlobStreamError> {
        var request = request
        do {
            try hook(for: request.url)?(&request)
        } catch {
            return .failure(BlobStreamError(.sourceFailed, "preparing GET \(name) failed: \(error)", cause: error))
        }
        do {
            return .success(
                try HTTPClient.Request(
                    url: request.url.absoluteString, method: request.method, headers: request.headers))
        } catch {
            return .failure(BlobStreamError(.malformedURL, "\(name): \(error)", cause: error))
        }
    }
}
