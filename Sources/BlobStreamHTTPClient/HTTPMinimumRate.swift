import Foundation

/// The slowest a ranged GET's body may come before the GET counts as stalled, as curl's
/// `--speed-limit` and `--speed-time`: fewer than `bytesPerSecond × window` bytes within any
/// `window` (from the moment the request is sent) end the GET, which is then tried again at
/// its offset under `If-Match` like an idle timeout (`HTTPRetryPolicy.idleTimeoutRetries`),
/// or fails with `.timedOut` naming the stall, the URL and the offset.
///
/// ```swift
/// var options = HTTPRangeOptions()
/// options.minimumRate = HTTPMinimumRate(bytesPerSecond: 10 << 10, window: .seconds(20))
/// options.minimumRate = nil  // only the idle timeout (a byte a second keeps a GET alive)
/// ```
///
/// The idle timeout alone never ends a server that sends one byte a second: each byte starts
/// it anew. The default (`standard`, 1 KiB/s over 30 s) ends such a GET within about 40 s,
/// and never a healthy one: any link that brings 30 KiB in 30 s to each GET in flight (about
/// 1 Mbit/s for 4 GETs of a download) passes, and so does a pause shorter than the window
/// (a store failing over to another node, which takes its node timeout, 10 s by default on
/// OpenStack Swift). Time while the reader itself holds the server back (a first answer read
/// as it arrives, a full buffer) does not count.
public struct HTTPMinimumRate: Sendable, Equatable {
    /// The least average rate, in bytes per second, over `window` (at least 1).
    public var bytesPerSecond: Int
    /// How long the rate is averaged over (at least 10 ms).
    public var window: Duration

    /// A minimum of `bytesPerSecond` over `window`.
    public init(bytesPerSecond: Int, window: Duration) {
        self.bytesPerSecond = max(bytesPerSecond, 1)
        self.window = max(window, .milliseconds(10))
    }

    /// 1 KiB/s over 30 s: the default of `HTTPRangeOptions.minimumRate`.
    public static let standard = HTTPMinimumRate(bytesPerSecond: 1 << 10, window: .seconds(30))

    /// The window in seconds.
    var seconds: Double { Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18 }
}
