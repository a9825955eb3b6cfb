import Foundation

extension SwiftStoreTestServer {
    /// The store every suite of this test process shares: started on the first call (the
    /// other callers wait for it), stopped when the process exits. A failure to start is
    /// remembered and thrown to every caller, so a broken setup costs one start-up, not one
    /// per test.
    ///
    /// Suites keep apart by bucket names of their own (``uniqueBucketName(_:)``); a test
    /// that stops or restarts a store uses ``start()`` instead.
    public static func shared() async throws -> SwiftStoreTestServer {
        try await offThePool { try SharedStore.instance.get() }
    }

    /// Runs blocking `work` (a start-up waits seconds in `read` and `waitpid`) on a thread of
    /// its own, so that the tests' cooperative threads stay free meanwhile.
    static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}

/// The lazily started shared store.
final class SharedStore: @unchecked Sendable {
    // Unchecked Sendable: `result` is only touched under `lock`.
    static let instance = SharedStore()
    private let lock = NSLock()
    private var result: Result<SwiftStoreTestServer, any Error>?

    func get() throws -> SwiftStoreTestServer {
        try lock.withLock {
            if let result { return try result.get() }
            let started = Result { try SwiftStoreTestServer.startBlocking() }
            result = started
            if case .success = started { atexit { SharedStore.instance.stopAtExit() } }
            return try started.get()
        }
    }

    private func stopAtExit() {
        if case .success(let store) = lock.withLock({ result }) { store.stop() }
    }
}
