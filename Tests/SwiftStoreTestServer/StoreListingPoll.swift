extension SwiftStoreTestServer {
    /// Waits until `condition` holds, asking it every 50 ms, for at most `limit`; returns
    /// whether it held. For what only polling can see: Swift updates its container listings
    /// (ListMultipartUploads, ListParts) in the background, and tells no one when; every other
    /// wait in the suites waits on an event (a proxy's log, a process's end).
    public static func poll(upTo limit: Duration, until condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while try await !condition() {
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(50))
        }
        return true
    }
}
