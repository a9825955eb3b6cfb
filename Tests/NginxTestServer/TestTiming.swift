import Foundation

/// Time bounds for the upload checks. A bound is what the design promises (cancellation ends
/// an upload within a second); under ThreadSanitizer (`make tsan` sets `TSAN_OPTIONS`) every
/// instruction runs several times slower, so a bound is scaled there, and only there. The
/// promise itself is checked by the ordinary run (`make test`).
public enum TestTiming {
    /// 5 under ThreadSanitizer, else 1.
    public static let slowdown: Int64 = ProcessInfo.processInfo.environment["TSAN_OPTIONS"] == nil ? 1 : 5

    /// What "at once" means for a check that runs inside the whole suite: hundreds of tests,
    /// nginx and the object store share 2 cores, and a cancellation or a refused connection
    /// that takes 60 ms alone took up to 1.9 s there, 3.5 s once the object store's tests
    /// grew (its servers start beside them), and 6.7 s (URLSession's cancel) with a build
    /// running beside the suite. The checks that use it tell "at once" from what they rule
    /// out: waiting for the connect timeout (10 s), the idle timeout (60 s) or retries
    /// (seconds each), so the bound stays below the shortest of those.
    public static let promptly: Duration = .seconds(8)

    /// `duration` times `slowdown`.
    public static func scaled(_ duration: Duration) -> Duration { duration * slowdown }

    /// Waits until `condition` holds, checking every 20 ms, for at most `limit` (scaled);
    /// returns whether it held.
    public static func wait(upTo limit: Duration, until condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + scaled(limit)
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
