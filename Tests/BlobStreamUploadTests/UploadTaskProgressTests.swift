import BlobStreamUpload
import Foundation
import Testing

/// `UploadTask.progress` hands on the first report, each one at 0, the finishing one, and
/// otherwise one per `progressInterval`: a producer that reports per chunk does not wake the
/// reader per chunk.
@Suite("UploadTask: progress reports")
struct UploadTaskProgressTests {
    @Test("100,000 reports in a burst reach the reader as a few, ending with the finishing one")
    func burstIsThinned() async throws {
        let chunks: Int64 = 100_000
        let task = UploadTask { progress in
            for i in 0...chunks { progress(UploadProgress(sent: i, total: chunks, isFinished: i == chunks)) }
            return UploadResult(statusCode: 201, headers: [], body: Data(), bytesSent: chunks)
        }
        var reports: [UploadProgress] = []
        for await report in task.progress { reports.append(report) }
        let result = try await task.result
        #expect(result.bytesSent == chunks)
        #expect(reports.last == UploadProgress(sent: chunks, total: chunks, isFinished: true))
        #expect(reports.count < 1_000, "\(reports.count) reports reached the reader")
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.sent < $1.sent })
    }
}
