import BlobStreamHTTPClient
import Testing

/// How the waits between attempts are charged to a retry budget: a source's ranges each
/// whole; an upload's parts in flight together once (the time the upload waits on the store).
@Suite("RetryBudget: the waits charged to a source or an upload")
struct RetryBudgetTests {
    @Test("16 requests failing together: charged once each overlap counts once; whole, the budget runs out")
    func overlappingWaits() {
        let policy = HTTPRetryPolicy(maxAttempts: 5, maxWaiting: .seconds(2), initialDelay: .seconds(1))
        let upload = RetryBudget(policy: policy, chargesOverlapOnce: true)
        let together = (0..<16).compactMap { _ in upload.wait(after: 1, reason: .failure) }
        #expect(together.count == 16)
        #expect(together.allSatisfy { $0 >= .milliseconds(500) && $0 <= .seconds(1) }, "\(together)")
        // One wait of at most 1 s, and the few microseconds between the calls.
        #expect(upload.waited < .milliseconds(1100), "\(upload.waited)")

        let source = RetryBudget(policy: policy)
        let summed = (0..<16).compactMap { _ in source.wait(after: 1, reason: .failure) }
        // 16 waits of 0.5 to 1 s each do not fit in 2 s.
        #expect(summed.count < 16)
        #expect(source.waited == .seconds(2))
        // No attempt past the fifth, whatever the budget.
        #expect(upload.wait(after: 5, reason: .failure) == nil)
    }
}
