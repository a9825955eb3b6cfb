import BlobStream
import BlobStreamHTTPClient
import BlobStreamNginxTestSupport
import Foundation
import Testing

/// The example of BlobStreamNginxTestSupport's landing page, as a user's test target would
/// write it (importing the shipped product alone), plus what `stop()` promises.
@Suite("BlobStreamNginxTestSupport: the documented example")
struct NginxTestSupportExampleTests {
    @Test("upload to the shipped server; the stored copy is the bytes sent")
    func uploadLandsWhole() async throws {
        let server = try NginxTestServer()
        defer { server.stop() }
        let bytes = Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let body = UploadBody(length: Int64(bytes.count)) { DataBytesSource(bytes) }

        let result = try await HTTPClientUploader().upload(body, to: "\(server.baseURL)/files/a.bin").result

        #expect(result.statusCode == 201)
        #expect(server.stored("a.bin") == bytes)
        #expect(server.stored("never-sent.bin") == nil)
    }

    @Test("stop() ends the server and removes its folder; a second stop() does nothing")
    func stop() async throws {
        let server = try NginxTestServer()
        #expect(server.baseURL == "http://127.0.0.1:\(server.port)")
        #expect(FileManager.default.fileExists(atPath: server.folder.path))
        server.stop()
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: server.folder.path))
        // Nothing listens there any more: the upload fails (connection refused).
        await #expect(throws: (any Error).self) {
            _ = try await HTTPClientUploader().upload(
                UploadBody(length: 1) { DataBytesSource(Data([1])) }, to: "\(server.baseURL)/files/late.bin"
            ).result
        }
    }
}
