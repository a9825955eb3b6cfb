import Foundation

/// When `HTTPRangeDataSource` asks for a range again while its first GET still runs: a GET
/// the reader waits for that has brought no byte for `max(multiple × the median of the
/// longest silences of the recent ranges, floor)` is hedged by a second GET of the same bytes
/// (at the same offset, under `If-Match`); the first answer that completes is kept and the
/// other GETs cancelled. Before the source has a range of its own to measure (its first GET),
/// the silence allowed is `firstDelay`.
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
/// up to `maxHedges`. The cost: a second GET of a range now and then (the ones cancelled
/// bring a few bytes at most), never a byte of the wrong version (`If-Match`, and the answer
/// is checked as any other).
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
    /// The silence before a hedge while the source has no completed range to measure (its
    /// first GET; at least `floor`): 250 ms by default.
    public var firstDelay: Duration

    /// Hedging with the given bounds (by default 100 ms, 4 × the median silence, 4 hedges,
    /// 250 ms before the first range completed).
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
