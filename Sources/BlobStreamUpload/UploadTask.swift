import BlobStream
import Foundation

/// An upload under way: its progress as an `AsyncSequence`, its result, and a way to stop
/// it. `UploadClient.upload(...)` makes one; the upload runs whether or not anyone reads
/// `progress`.
///
/// ```swift
/// let upload = URLSessionUploader().upload(body, to: url)
/// Task { for await report in upload.progress { bar.update(report.sent) } }
/// let result = try await upload.result
/// ```
public final class UploadTask: Sendable {
    /// Progress reports as the body is handed to the client, ending when the upload ends
    /// (with a result or an error). At most one every `progressInterval` (25 ms), besides the
    /// first, each one at 0 (after a redirect, reports start again from 0) and the finishing
    /// one (`isFinished`), which is never dropped; only the newest report waits for a slow
    /// reader. Iterate it once: it is a single stream.
    public let progress: AsyncStream<UploadProgress>
    private let task: Task<UploadResult, any Error>

    /// The shortest time between two progress reports (but for the first, those at 0 and the
    /// finishing one): a report per chunk would wake the reader's task per chunk, 16,000
    /// times for 1 GiB in 64 KiB reads, for a progress line that shows 40 a second at most.
    public static let progressInterval: Duration = .milliseconds(25)

    /// Runs `work` in a task of its own, handing it the function that reports progress.
    /// For `UploadClient` conformers that build the task themselves; `upload(...)` uses it.
    public init(
        _ work:
            @escaping @Sendable (_ progress: @escaping @Sendable (UploadProgress) -> Void) async throws -> UploadResult
    ) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: UploadProgress.self, bufferingPolicy: .bufferingNewest(1))
        progress = stream
        let throttle = ProgressThrottle()
        task = Task {
            defer { continuation.finish() }
            return try await work { report in
                if throttle.admits(report) { continuation.yield(report) }
            }
        }
    }

    /// The upload's answer, once it is finished.
    ///
    /// - Throws: what the client threw (`BlobStreamError` naming the URL), or
    ///   `CancellationError` when the upload was cancelled — also when the task awaiting
    ///   this is cancelled, which cancels the upload.
    public var result: UploadResult {
        get async throws {
            let task = self.task
            return try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        }
    }

    /// Stops the upload: `result` throws `CancellationError`.
    public func cancel() { task.cancel() }
}

/// Lets through the progress reports `UploadTask.progress` hands on: the first, those at 0,
/// the finishing one, and otherwise one per `UploadTask.progressInterval`. Called by the
/// client's body producer (one thread at a time, but from different threads over an upload).
private final class ProgressThrottle: Sendable {
    private let lastReport = Locked<ContinuousClock.Instant?>(nil)

    func admits(_ report: UploadProgress) -> Bool {
        let now = ContinuousClock.now
        return lastReport.withLock { last in
            if report.isFinished || report.sent == 0 || last == nil
                || now - last! >= UploadTask.progressInterval
            {
                last = now
                return true
            }
            return false
        }
    }
}
