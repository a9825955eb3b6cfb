import Foundation

/// When `HTTPRangeDataSource` asks for a range again while its first GET still runs: a GET
/// the reader waits for that has brought no byte for `max(multiple × the median time of the
/// recent ranges, floor)` is hedged by a second GET of the same bytes (at the same offset,
/// under `If-Match`); the first answer that completes is kept and the other GET cancelled.
///
/// ```swift
/// var options = HTTPRangeOptions()
/// options.hedging = HTTPHedging(floor: .seconds(1))  // a slower store
/// options.hedging = nil                              // one GET per range, no second one
/// ```
///
/// A store with replicas behind a proxy (OpenStack Swift, S3) sends each GET to one node;
/// a node that hangs (it accepts the connection and answers nothing) holds the GET until the
/// proxy's node timeout, and a download meets it again and again. The hedge usually reaches
/// another node at once. The cost: a second GET of a range now and then (the one cancelled
/// brings a few bytes at most), never a byte of the wrong version (`If-Match`, and the
/// answer is checked as any other).
public struct HTTPHedging: Sendable, Equatable {
    /// The least silence before a hedge (at least 10 ms): 250 ms by default, far above a
    /// healthy store's time to first byte on a local network, well under a node timeout.
    public var floor: Duration
    /// How many times the median time of the recent ranges (sent to complete) a GET may stay
    /// silent before it is hedged: 2 by default.
    public var multiple: Double
    /// The most hedges of one range (each after another silence): 2 by default.
    public var maxHedges: Int

    /// Hedging with the given bounds (by default 250 ms, 2 × the median, 2 hedges).
    public init(floor: Duration = .milliseconds(250), multiple: Double = 2, maxHedges: Int = 2) {
        self.floor = max(floor, .milliseconds(10))
        self.multiple = max(multiple, 1)
        self.maxHedges = max(maxHedges, 0)
    }

    /// The default of `HTTPRangeOptions.hedging`.
    public static let standard = HTTPHedging()
}
