import BlobStream
import Foundation
import NIOCore

/// What this process has measured of one origin (scheme, host, port), shared by every source
/// that reads from it: how long its recent GETs took to bring their answer's head, and how
/// long the recent connections took to be made. A source's first GETs hedge from it before
/// they have measured anything of their own (`HTTPHedging`): `blobstream cat` of a member
/// opens the archive and its index side by side, and the member's first range then knows
/// what the index's answer took.
final class OriginTimings: Sendable {
    /// How many heads' times the median is taken over.
    static let headsKept = 16
    /// A GET with no measured answer yet waits `connectMultiple ×` its own connection's
    /// setup before a hedge (at least `HTTPHedging.firstDelay`): a first answer takes about a
    /// round trip more than a TCP connect, and less than a TLS handshake's two or three.
    static let connectMultiple: Int64 = 3
    /// The most origins remembered (a process that reads from more forgets them all).
    static let originsKept = 64

    /// The time from a GET's head sent to its answer's head, in nanoseconds.
    private let heads = Locked<[Int64]>([])

    private static let registry = Locked<[String: OriginTimings]>([:])

    /// The timings of `url`'s origin in this process (made on first use).
    static func of(_ url: URL) -> OriginTimings {
        let key = "\(url.scheme?.lowercased() ?? "")://\(url.host?.lowercased() ?? ""):\(url.port ?? -1)"
        return registry.withLock { origins in
            if let known = origins[key] { return known }
            if origins.count >= originsKept { origins = [:] }
            let made = OriginTimings()
            origins[key] = made
            return made
        }
    }

    /// Notes that a GET's answer's head came `elapsed` after its own head was sent.
    func noteHead(after elapsed: TimeAmount) {
        heads.withLock { heads in
            heads.append(elapsed.nanoseconds)
            if heads.count > Self.headsKept { heads.removeFirst() }
        }
    }

    /// The median time to an answer's head of the recent GETs; nil before any came.
    var medianHead: TimeAmount? {
        heads.withLock { heads in heads.isEmpty ? nil : .nanoseconds(heads.sorted()[heads.count / 2]) }
    }

    /// The silence after which a GET is hedged while its source has no range of its own to
    /// measure: `max(multiple × the median time to the recent heads, floor)` once this
    /// process heard from the origin; before that `max(firstDelay, connectMultiple × connect)`
    /// (`connect`: how long the GET's own connection took to be made, when known).
    func delay(_ hedging: HTTPHedging, connect: TimeAmount?) -> TimeAmount {
        if let median = medianHead {
            return max(TimeAmount(hedging.floor), .nanoseconds(Int64(Double(median.nanoseconds) * hedging.multiple)))
        }
        let first = TimeAmount(max(hedging.firstDelay, hedging.floor))
        guard let connect else { return first }
        return max(first, .nanoseconds(connect.nanoseconds * Self.connectMultiple))
    }
}
