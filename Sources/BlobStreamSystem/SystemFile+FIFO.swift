import Dispatch
import Foundation // Thread
import SystemPackage

extension SystemFile {
    /// Opens a FIFO for reading (`O_RDONLY | O_CLOEXEC | O_NOCTTY`, blocking), waiting for a
    /// writer at most `timeout`: the blocking `open` runs on a helper thread; when time is
    /// up, a non-blocking open for writing (which succeeds, since a reader is waiting)
    /// releases it, and the FIFO is reported as having no writer.
    ///
    /// - Returns: the descriptor; nil when no writer came in time; the failure of `open`.
    package static func openFIFO(_ path: String, writerTimeout timeout: Duration) -> Result<
        SystemFile?, SystemCallFailure
    > {
        final class Outcome: @unchecked Sendable { // written by the thread before `done` signals
            var result: Result<SystemFile, SystemCallFailure> = .failure(SystemCallFailure("open", .ioError))
        }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            outcome.result = openForReading(path)
            done.signal()
        }
        thread.start()
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        if done.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds))) == .success {
            return outcome.result.map { $0 }
        }
        // No writer in time: stand in for one so that the helper's open returns, then close
        // both. (Should that open fail, the helper stays blocked in its open; nothing waits.)
        let release = path.withCString {
            try? FileDescriptor.open($0, .writeOnly, options: [.nonBlocking, .closeOnExec])
        }
        if let release {
            done.wait()
            if case .success(let file) = outcome.result { file.close() }
            try? release.close()
        }
        return .success(nil)
    }
}
