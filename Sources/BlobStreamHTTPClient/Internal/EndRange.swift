import BlobStream
import Foundation

/// The object's last bytes asked for beside the first GET (`expectEnd(_:)`), with
/// `Range: bytes=-COUNT` since the length is not known yet: their answer is used only when it
/// is a 206 of exactly those bytes carrying the first answer's strong ETag.
struct EndRange {
    /// How many of the object's last bytes were asked for.
    var count: Int?
    /// Their GET while in flight.
    var fetch: RangeFetch?
    /// The block it brought, once judged against the first answer.
    var block: RangeBlock?

    /// Sends the GET of the object's last `count` bytes, when asked for (at `open()`).
    mutating func start(_ sender: RangeSender) {
        guard let count else { return }
        fetch = sender.startSuffix(count: count)
    }

    /// Whether bytes from `offset` on are the object's end asked for at open.
    func holds(from offset: Int64, of object: RemoteObject) -> Bool {
        guard let count, fetch != nil || block != nil else { return false }
        return offset >= max(0, object.length - Int64(count))
    }

    /// The GET of the object's end asked for at open, to be waited for, and the bytes it
    /// must bring (`expected`), when `range` lies in them and its answer has not been judged
    /// yet; nil otherwise. The GET is taken: `settle` judges its answer. On an event loop of
    /// the client, where no answer may be waited for, it is cancelled (nil).
    mutating func pending(covering range: Range<Int64>, of object: RemoteObject, sender: RangeSender) -> (
        fetch: RangeFetch, expected: ClosedRange<Int64>
    )? {
        guard block == nil, let fetch, let count, object.etag != nil, object.length > 0 else { return nil }
        let expected = max(0, object.length - Int64(count))...object.length - 1
        guard expected.lowerBound <= range.lowerBound, range.upperBound <= object.length else { return nil }
        self.fetch = nil
        if !fetch.isDone, sender.deadlockCheck() != nil {
            fetch.cancel()
            sender.forget(fetch)
            return nil
        }
        return (fetch, expected)
    }

    /// Keeps the block `answer` brings when it holds exactly the bytes `expected` of the
    /// object the first answer described (a 206, the same strong ETag): the answer of the
    /// GET asked for at open, or of its hedge (`Range: bytes=FIRST-LAST`, `If-Match`).
    mutating func settle(
        _ answer: Result<RangeAnswer, RangeFetch.RangeFailure>, expected: ClosedRange<Int64>, of object: RemoteObject,
        judge: RangeJudgement
    ) {
        guard let etag = object.etag, case .success(let got) = answer, got.head.status.code == 206,
            got.head.headers.first(name: "ETag") == etag,
            case .success(let judged) = judge.block(answer, range: expected, of: object)
        else { return }
        block = judged
    }

    /// The block of the object's end, once judged, when `range` lies in it; nil otherwise.
    func block(covering range: Range<Int64>) -> RangeBlock? {
        guard let block, block.start <= range.lowerBound, range.upperBound <= block.end else { return nil }
        return block
    }
}
