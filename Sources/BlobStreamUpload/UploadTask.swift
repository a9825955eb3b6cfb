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
    /// (with a result or an error). Only the newest report waits for a slow reader: none is
    /// queued behind it, and the finishing one (`isFinished`) is never dropped. After a
    /// redirect, reports start again from 0. Iterate it once: it is a single stream.
    public let progress: AsyncStream<UploadProgress>
    private let task: Task<UploadResult, any Error>

    /// Runs `work` in a task of its own, handing it the function that reports progress.
    /// For `UploadClient` conformers that build the task themselves; `upload(...)` uses it.
    public init(
        _ work:
            @escaping @Sendable (_ progress: @escaping @Sendable (UploadProgress) -> Void) async throws -> UploadResult
    ) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: UploadProgress.self, bufferingPolicy: .bufferingNewest(1))
        progress = stream
        task = Task {
            defer { continuation.finish() }
            return try await work { _ = continuation.yield($0) }
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
