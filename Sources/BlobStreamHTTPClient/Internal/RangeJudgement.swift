import AsyncHTTPClient
import BlobStream
import BlobStreamUpload
import Foundation
import NIOCore
import NIOHTTP1

/// What the first answer told about the object: its length and its validators. Later
/// requests are sent only with a strong ETag (as `If-Match`), and their answers checked
/// against it.
struct RemoteObject: Sendable {
    var length: Int64
    /// A strong ETag (a weak one cannot be used with `If-Match`).
    var etag: String?
    /// The ETag the server sent when it was weak (`W/"…"`), for messages.
    var weakETag: String?
    var lastModified: String?

    /// The facts in an answer's `headers`, for an object of `length` bytes.
    init(length: Int64, headers: HTTPHeaders) {
        self.length = length
        let sent = headers.first(name: "ETag")
        etag = sent.flatMap { $0.hasPrefix("W/") ? nil : $0 }
        weakETag = sent.flatMap { $0.hasPrefix("W/") ? $0 : nil }
        lastModified = headers.first(name: "Last-Modified")
    }
}

/// Bytes of the object from `start`.
struct RangeBlock: Sendable {
    var start: Int64
    var bytes: PinnedBytes
    var end: Int64 { start + Int64(bytes.count) }
}

/// What the first answer brought besides the object's facts.
enum FirstAnswer: Sendable {
    /// A 206 to `bytes=OFFSET-`: its body, bytes OFFSET to `last`, is read as it arrives.
    case streamed(last: Int64)
    /// Every byte there is to read: the whole object from offset 0 (a 200 from a server that
    /// ignored `Range`), or nothing (the offset asked for is the end).
    case held(RangeBlock?)
}

/// Judges answers to ranged GETs: whole or an error that names the URL (and the offset
/// where it matters), never a short or spliced block.
struct RangeJudgement {
    let url: String
    let connection: HTTPConnectionOptions

    /// The first answer, to `bytes=OFFSET-`: the object's facts, and its body to read as it
    /// comes (a 206) or held whole (a 200 no longer than `blockSize`, a 416 at the end).
    func opening(_ result: Result<RangeAnswer, RangeFetch.RangeFailure>, offset: Int64, blockSize: Int)
        -> Result<(RemoteObject, FirstAnswer), BlobStreamError>
    {
        judged {
            let answer = try checked(result, range: offset...(offset + Int64(blockSize) - 1))
            let headers = answer.head.headers
            switch answer.head.status.code {
            case 206:
                let (first, last, total) = try contentRange(headers)
                guard let total else { throw corrupt("a Content-Range without the object's length") }
                guard first == offset else {
                    throw corrupt("asked for the bytes from offset \(offset), the server sent \(first)-\(last)")
                }
                return (RemoteObject(length: total, headers: headers), .streamed(last: last))
            case 200:
                // The server ignored Range, and the whole object fit in one block.
                let object = RemoteObject(length: Int64(answer.body.count), headers: headers)
                guard offset <= object.length else { throw pastEnd(offset, length: object.length) }
                return (object, .held(answer.body.isEmpty ? nil : RangeBlock(start: 0, bytes: answer.body)))
            default: // 416: the offset asked for is at or past the end
                guard let total = unsatisfiedLength(headers) else { throw statusError(answer) }
                guard offset == total else { throw pastEnd(offset, length: total) }
                return (RemoteObject(length: total, headers: headers), .held(nil))
            }
        }
    }

    /// The first answer's body ended or failed after `received` of the bytes of `range`
    /// (those it was to hold): `.truncated` naming the offset, `.closed` when cancelled.
    func cut(_ failure: RangeFetch.RangeFailure?, received: Int, range: ClosedRange<Int64>) -> BlobStreamError {
        guard let failure else {
            return BlobStreamError(
                .truncated,
                "\(url): the answer ended after \(received) of \(range.count) bytes, at offset "
                    + "\(range.lowerBound + Int64(received))")
        }
        if case .failure(let error) = judged({ try checked(.failure(failure), range: range) }) { return error }
        return BlobStreamError(.sourceFailed, "\(url): the answer failed at offset \(range.lowerBound)")
    }

    /// Reading at `offset` would need another request, and `object` has no strong ETag to
    /// make sure that request reads the same version.
    func needsSecondRequest(at offset: Int64, of object: RemoteObject) -> BlobStreamError {
        BlobStreamError(
            .offsetUnsupported,
            "\(url): reading at offset \(offset) needs another request, but the server gave no strong ETag "
                + "(it sent \(sent(object))), so the file could change between requests; without one, a remote file "
                + "is read in one pass, from where reading starts to its end")
    }

    /// Why `object` is read in one pass: a sentence naming the URL and what the server sent.
    func noStrongETag(_ object: RemoteObject) -> String {
        "the server of \(url) gave no strong ETag (it sent \(sent(object))), so the file could change between "
            + "requests and is read in one pass"
    }

    /// The validators the server sent, as a phrase.
    private func sent(_ object: RemoteObject) -> String {
        object.weakETag.map { "a weak ETag \($0)" }
            ?? (object.lastModified != nil ? "only Last-Modified" : "neither ETag nor Last-Modified")
    }

    /// True for a 416 answer to the first GET that does not tell the object's length (no
    /// `Content-Range: bytes */TOTAL`, as Swift's s3api answers `InvalidRange` at the end of
    /// an object or for an empty one): a HEAD then tells the length.
    func needsLength(_ result: Result<RangeAnswer, RangeFetch.RangeFailure>) -> Bool {
        guard case .success(let answer) = result, answer.head.status.code == 416 else { return false }
        return unsatisfiedLength(answer.head.headers) == nil
    }

    /// The answer to that HEAD: the object's facts and no block when the offset asked for
    /// is exactly its length (the end, cleanly); an error past the end, and an error too
    /// when the offset is below the length (a 416 for bytes the object has is no end).
    func probed(_ result: Result<RangeAnswer, RangeFetch.RangeFailure>, range: ClosedRange<Int64>) -> Result<
        (RemoteObject, FirstAnswer), BlobStreamError
    > {
        judged {
            let answer = try checked(result, range: range)
            guard answer.head.status.code == 200 else { throw statusError(answer) }
            let headers = answer.head.headers
            guard let length = headers.first(name: "Content-Length").flatMap({ Int64($0) }), length >= 0 else {
                throw corrupt("the server answered 416 to bytes from \(range.lowerBound), and HEAD without a length")
            }
            guard range.lowerBound <= length else { throw pastEnd(range.lowerBound, length: length) }
            guard range.lowerBound == length else {
                throw BlobStreamError(
                    .httpFailed,
                    "GET \(url) failed: HTTP 416 for bytes from offset \(range.lowerBound), yet the object is "
                        + "\(length) bytes long")
            }
            return (RemoteObject(length: length, headers: headers), .held(nil))
        }
    }

    /// A later answer: exactly the bytes of `range` of the same object.
    func block(
        _ result: Result<RangeAnswer, RangeFetch.RangeFailure>, range: ClosedRange<Int64>, of object: RemoteObject
    )
        -> Result<RangeBlock, BlobStreamError>
    {
        judged {
            let answer = try checked(result, range: range)
            let headers = answer.head.headers
            if let etag = object.etag, let now = headers.first(name: "ETag"), now != etag {
                throw changed("its ETag is now \(now), was \(etag)")
            }
            switch answer.head.status.code {
            case 206:
                let (first, last, total) = try contentRange(headers)
                if let total, total != object.length {
                    throw changed("it is now \(total) bytes long, was \(object.length)")
                }
                return try block(answer, first: first, last: last, range: range, length: object.length)
            case 200:
                guard answer.body.count == object.length else {
                    throw changed("it is now \(answer.body.count) bytes long, was \(object.length)")
                }
                return try slice(answer.body, from: range.lowerBound, length: object.length)!
            default:
                throw changed(
                    "the server answered \(answer.head.status.code) for bytes \(range.lowerBound)-\(range.upperBound)")
            }
        }
    }

    /// What `body` returns, or the `BlobStreamError` it throws.
    private func judged<T>(_ body: () throws -> T) -> Result<T, BlobStreamError> {
        do {
            return .success(try body())
        } catch let error as BlobStreamError {
            return .failure(error)
        } catch {
            return .failure(BlobStreamError(.sourceFailed, "\(url): \(error)", cause: error))
        }
    }

    /// The answer, when its status is 206, 200, or (for an opening) 416; otherwise the
    /// error that says what went wrong.
    private func checked(
        _ result: Result<RangeAnswer, RangeFetch.RangeFailure>, range: ClosedRange<Int64>
    ) throws -> RangeAnswer {
        switch result {
        case .success(let answer):
            switch answer.head.status.code {
            case 200, 206, 416: return answer
            case 412: throw changed("its ETag or modification time no longer match (HTTP 412)")
            default: throw statusError(answer)
            }
        case .failure(.notSent(let error)):
            throw error
        case .failure(.cancelled):
            throw BlobStreamError(.closed, "\(url): closed while a read waited for the server")
        case .failure(.transport(let error, let status, let received)):
            if let stall = error as? RangeStalled {
                throw BlobStreamError(
                    .timedOut,
                    "GET \(url) stalled: \(stall) (reading bytes from offset \(range.lowerBound), stalled at offset "
                        + "\(range.lowerBound + Int64(received)))", cause: error)
            }
            if let status, !(200..<300).contains(status), !(error is RangeBodyTooLong) {
                throw BlobStreamError(.httpFailed, "GET \(url) failed: HTTP \(status)", cause: error)
            }
            if error is RangeBodyTooLong {
                throw BlobStreamError(
                    .unsupported,
                    "\(url): the server ignored the Range request (it answered \(status ?? 200) with the whole object, "
                        + "larger than a block of \(range.count) bytes, reading from offset \(range.lowerBound))")
            }
            if let status, (200..<300).contains(status) {
                throw BlobStreamError(
                    .truncated,
                    "\(url): the answer ended after \(received) of \(range.count) bytes, at offset "
                        + "\(range.lowerBound + Int64(received)) (\(error))", cause: error)
            }
            throw transportError(error)
        }
    }

    /// The block of a 206 answer, checked against the range asked for.
    private func block(_ answer: RangeAnswer, first: Int64, last: Int64, range: ClosedRange<Int64>, length: Int64)
        throws -> RangeBlock
    {
        let expectedLast = min(range.upperBound, length - 1)
        guard first == range.lowerBound, last == expectedLast else {
            throw corrupt(
                "asked for bytes \(range.lowerBound)-\(expectedLast), the server sent \(first)-\(last)")
        }
        let expected = Int(last - first + 1)
        guard answer.body.count == expected else {
            let code: BlobStreamError.Code = answer.body.count < expected ? .truncated : .corrupt
            throw BlobStreamError(
                code,
                "\(url): the answer held \(answer.body.count) of \(expected) bytes, at offset "
                    + "\(first + Int64(min(answer.body.count, expected)))")
        }
        return RangeBlock(start: first, bytes: answer.body)
    }

    /// The bytes of a whole object from `offset` (nil at its end).
    private func slice(_ whole: PinnedBytes, from offset: Int64, length: Int64) throws -> RangeBlock? {
        guard offset <= length else { throw pastEnd(offset, length: length) }
        guard offset < length else { return nil }
        return RangeBlock(start: offset, bytes: PinnedBytes(whole[Int(offset)...]))
    }

    /// `Content-Range: bytes FIRST-LAST/TOTAL` (TOTAL may be `*`).
    private func contentRange(_ headers: HTTPHeaders) throws -> (Int64, Int64, Int64?) {
        guard let value = headers.first(name: "Content-Range"), value.hasPrefix("bytes ") else {
            throw corrupt("a 206 answer without a Content-Range of bytes")
        }
        let parts = value.dropFirst(6).split(separator: "/", maxSplits: 1)
        let bounds = parts.first?.split(separator: "-", maxSplits: 1) ?? []
        guard parts.count == 2, bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
            first <= last
        else { throw corrupt("an unreadable Content-Range '\(value)'") }
        if parts[1] == "*" { return (first, last, nil) }
        guard let total = Int64(parts[1]), total > last else {
            throw corrupt("an unreadable Content-Range '\(value)'")
        }
        return (first, last, total)
    }

    /// The length in a 416 answer's `Content-Range: bytes */TOTAL`.
    private func unsatisfiedLength(_ headers: HTTPHeaders) -> Int64? {
        guard let value = headers.first(name: "Content-Range"), value.hasPrefix("bytes */") else { return nil }
        return Int64(value.dropFirst(8))
    }

    private func statusError(_ answer: RangeAnswer) -> BlobStreamError {
        let head = answer.head
        let status = Int(head.status.code)
        let code: BlobStreamError.Code =
            switch status {
            case 404, 410: .notFound
            case 401, 403: .permissionDenied
            default: .httpFailed
            }
        return BlobStreamError(
            code, "GET \(url) failed: HTTP \(status) \(head.status.reasonPhrase)" + errorDocument(answer.body))
    }

    /// `" (Code: Message)"` from an XML error document as S3 and other object stores send
    /// (`<Error><Code>NoSuchKey</Code><Message>…</Message></Error>`); empty for any other body.
    private func errorDocument(_ body: PinnedBytes) -> String {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        func element(_ name: String) -> String? {
            guard let start = text.range(of: "<\(name)>"),
                let end = text.range(of: "</\(name)>", range: start.upperBound..<text.endIndex)
            else { return nil }
            let value = text[start.upperBound..<end.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
            return value.isEmpty || value.count > 200 || value.contains("<") ? nil : value
        }
        guard text.contains("<Error>"), let code = element("Code") else { return "" }
        return " (" + code + (element("Message").map { ": " + $0 } ?? "") + ")"
    }

    private func changed(_ why: String) -> BlobStreamError {
        BlobStreamError(.changed, "\(url) changed while it was read: \(why)")
    }

    private func corrupt(_ what: String) -> BlobStreamError {
        BlobStreamError(.corrupt, "\(url): \(what)")
    }

    private func pastEnd(_ offset: Int64, length: Int64) -> BlobStreamError {
        BlobStreamError(.invalidOffset, "offset \(offset) is past the end of \(url) (\(length) bytes)")
    }

    /// A failure to reach the server or to hear from it.
    func transportError(_ error: any Error) -> BlobStreamError {
        if let error = error as? HTTPClientError {
            if error == .connectTimeout {
                return BlobStreamError(
                    .timedOut,
                    "cannot connect for \(url) within \(seconds(connection.connectTimeout)) (connect timeout)",
                    cause: error)
            }
            if error == .readTimeout {
                return BlobStreamError(
                    .timedOut, "\(url): no byte from the server for \(seconds(connection.idleTimeout)) (idle timeout)",
                    cause: error)
            }
            if error == .deadlineExceeded || error == .cancelled {
                return BlobStreamError(.timedOut, "GET \(url) did not finish in time", cause: error)
            }
        }
        if let error = error as? IOError {
            let reason = String(cString: strerror(error.errnoCode))
            return BlobStreamError(
                .ioFailed, "GET \(url) failed: \(reason.lowercased()) (errno \(error.errnoCode))", cause: error)
        }
        let text = String(reflecting: error)
        if text.contains("SSL") || text.contains("TLS") || text.contains("certificate") {
            return BlobStreamError(
                .ioFailed,
                "TLS connection for \(url) failed: \(error) (if a private CA signed the server's certificate, "
                    + "add it with HTTPConnectionOptions.caBundle or AWS_CA_BUNDLE)", cause: error)
        }
        return BlobStreamError(.ioFailed, "GET \(url) failed: \(error)", cause: error)
    }

    private func seconds(_ amount: TimeAmount) -> String {
        String(format: "%g s", Double(amount.nanoseconds) / 1e9)
    }
}

extension BlobStreamError.Code {
    /// An HTTP server answered with an error status the other codes do not name (5xx, 400,
    /// 405…); the message gives the status and the URL.
    public static let httpFailed = BlobStreamError.Code("httpFailed")
}
