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

    /// The block of the object's end asked for at open, when `range` lies in it: its answer
    /// is waited for and kept when it holds exactly those bytes of the object the first
    /// answer described (a 206, the same strong ETag); nil otherwise.
    mutating func block(
        covering range: Range<Int64>, of object: RemoteObject, judge: RangeJudgement, sender: RangeSender
    ) -> RangeBlock? {
        if let block {
            return block.start <= range.lowerBound && range.upperBound <= block.end ? block : nil
        }
        guard let fetch, let count, let etag = object.etag, object.length > 0 else { return nil }
        let expected = max(0, object.length - Int64(count))...object.length - 1
        guard expected.lowerBound <= range.lowerBound, range.upperBound <= object.length else { return nil }
        self.fetch = nil
        defer { sender.forget(fetch) }
        if !fetch.isDone, sender.deadlockCheck() != nil {
            fetch.cancel()
            return nil
        }
        let answer = fetch.wait()
        guard case .success(let got) = answer, got.head.status.code == 206,
            got.head.headers.first(name: "ETag") == etag,
            case .success(let judged) = judge.block(answer, range: expected, of: object)
        else { return nil }
        block = judged
        return judged
    }
}
