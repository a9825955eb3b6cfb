import Foundation

/// When `HTTPRangeDataSource` asks for a range again while its first GET still runs: a GET
/// that has brought no byte for `max(multiple × the median of the longest silences of the
/// recent ranges, floor)` is hedged by a second GET of the same bytes (at the same offset,
/// under `If-Match`); the first answer that completes is kept and the other GETs cancelled.
/// The blocks read ahead are hedged while the reader is still busy with those before them,
/// and a GET overtaken by one sent with it or after it (that one's answer came, this one's
/// did not) waits only twice what that one took (at least `floor`).
///
/// Before the source has a range of its own to measure (its first GET, the object's end
/// asked for at open), the silence allowed comes from what the process measured of the same
/// origin (scheme, host, port) for its other sources: `max(multiple × the median time to
/// their answers' heads, floor)`. A process that measured nothing yet (`blobstream cat` of a
/// member: its first requests) waits `firstDelay`, or 3 × the time its connection took to be
/// made when that is longer: a store 80 ms away answers a first small GET within about
/// 100 ms of it being sent (160 to 250 ms with the connection), under 250 ms; TLS over a long
/// round trip makes the connection, and the wait, longer.
///
/// ```swift
/// var options = HTTPRangeOptions()
/// options.hedging = HTTPHedging(floor: .seconds(1))  // a slower store
/// options.hedging = nil                              // one GET per range, no second one
/// ```
///
/// A store with replicas behind a proxy (OpenStack Swift, S3) sends each GET to one node;
/// a node that hangs (it accepts the connection and answers nothing) holds the GET until the
/// proxy's node timeout, and a download meets it again and again. A hedge usually reaches
/// another node at once; when it meets the same node, another follows after as long again,
/// up to `maxHedges` (each hedge is a request of its own: at most `maxHedges` more GETs of
/// one range, all cancelled once one answered). The cost: a second GET of a range now and
/// then (the ones cancelled bring a few bytes at most), never a byte of the wrong version
/// (`If-Match`, and the answer is checked as any other). `execute(_:with:deadline:)` hedges
/// a small request beside a read the same way (S3's `HEAD` for an object's checksum).
///
/// The silence measured is the longest gap in a GET that completed: its time to first byte,
/// or a pause in its body. A healthy store's gaps are a few milliseconds on a local network,
/// and grow with its load; the delay grows with them, so a busy store is not asked twice for
/// what it is merely slow to send.
public struct HTTPHedging: Sendable, Equatable {
    /// The least silence before a hedge (at least 10 ms): 100 ms by default, far above a
    /// healthy store's time to first byte on a local network, far under a node timeout.
    public var floor: Duration
    /// How many times the median of the recent ranges' longest silences a GET may stay
    /// silent before it is hedged: 4 by default.
    public var multiple: Double
    /// The most hedges of one range (each after another silence): 4 by default.
    public var maxHedges: Int
    /// The silence before a hedge while neither the source nor the process has measured an
    /// answer of the origin (a process's first GETs; at least `floor`, and at least 3 × the
    /// connection's setup): 250 ms by default, above the first answer of a healthy store
    /// 80 ms away, far under a node timeout.
    public var firstDelay: Duration

    /// Hedging with the given bounds (by default 100 ms, 4 × the median silence, 4 hedges,
    /// 250 ms before any answer of the origin was measured).
    public init(
        floor: Duration = .milliseconds(100), multiple: Double = 4, maxHedges: Int = 4,
        firstDelay: Duration = .milliseconds(250)
    ) {
        self.floor = max(floor, .milliseconds(10))
        self.multiple = max(multiple, 1)
        self.maxHedges = max(maxHedges, 0)
        self.firstDelay = max(firstDelay, self.floor)
    }

    /// The default of `HTTPRangeOptions.hedging`.
    public static let standard = HTTPHedging()
}
