import Foundation

/// Runs the peers' tasks on a thread of their own, off Swift's cooperative pool: a test that
/// blocks the pool's few threads (a synchronous read of a stream, in a synchronous test) must
/// not starve the peer it reads from, as a peer in another process never was.
final class PeerExecutor: TaskExecutor, @unchecked Sendable {
    // Unchecked Sendable: `jobs` is only touched with `condition` locked.
    static let shared = PeerExecutor()
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init() {
        let thread = Thread { [unowned self] in self.run() }
        thread.name = "HTTPTestPeers"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            let job = condition.withLock {
                while jobs.isEmpty { condition.wait() }
                return jobs.removeFirst()
            }
            job.runSynchronously(on: executor)
        }
    }
}
