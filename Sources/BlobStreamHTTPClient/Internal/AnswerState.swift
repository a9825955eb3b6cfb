import BlobStream
import Foundation

/// The first answer of an `HTTPRangeDataSource` as its reading thread takes it, and the object
/// it pins: every later answer is judged (`judge`) against that object's length and strong
/// ETag.
struct AnswerState {
    /// Judges every answer (the first, the blocks, the cuts), naming the URL.
    let judge: RangeJudgement
    /// True from `open()` until the first answer is judged and taken.
    var awaitingFirst = false
    /// The object the first answer described (its length, its validators), once taken.
    var object: RemoteObject?
    /// The first answer read as it arrives (no strong ETag): every byte comes from it.
    var streamed: Streamed?
}

/// The first answer read as it arrives: its stream, the offset of its next byte, and the
/// offset after its last.
struct Streamed {
    let stream: RangeStream
    var at: Int64
    let end: Int64

    /// Reads up to `maxLength` bytes at `position` (moved past them) into `buffer`: the bytes
    /// before `position` are dropped; an offset behind them, or past the bytes the answer
    /// holds, would need another request, which fails the read naming the missing validator.
    /// `take` takes from the stream (or says it would deadlock).
    mutating func read(
        _ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int, position: inout Int64, of object: RemoteObject,
        judge: RangeJudgement,
        take: (RangeStream, UnsafeMutablePointer<UInt8>?, Int) -> Result<RangeStream.Taken, BlobStreamError>
    ) -> Result<Int, BlobStreamError> {
        guard position >= at, position < end else {
            return .failure(judge.needsSecondRequest(at: position, of: object))
        }
        while true {
            let drop = position > at
            let want = drop ? Int(min(position - at, 1 << 20)) : Int(min(Int64(maxLength), end - position))
            switch take(stream, drop ? nil : buffer, want) {
            case .success(.bytes(let n)):
                at += Int64(n)
                if drop { continue }
                position += Int64(n)
                return .success(n)
            case .success(.end(let received)):
                return .failure(judge.cut(nil, received: received, range: stream.offset...end - 1))
            case .success(.failed(let failure)):
                return .failure(judge.cut(failure, received: 0, range: stream.offset...end - 1))
            case .failure(let error):
                return .failure(error)
            }
        }
    }
}
