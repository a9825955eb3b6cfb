import BlobStream
import BlobStreamTestSupport
import BlobStreamUpload
import Foundation
import Testing

/// What the upload vocabulary adds for every client: a result's entity tag from the answer's
/// `ETag`, the object store's fields at their defaults for an HTTP answer, a body's name.
@Suite("The upload vocabulary: result fields, body names")
struct UploadVocabularyTests {
    @Test(
        "an answer's ETag is the result's entity tag, without its quotes (a weak one as it is)",
        arguments: [
            ("ETag", "\"5d41402abc4b2a76b9719d911017c592\"", "5d41402abc4b2a76b9719d911017c592"),
            ("etag", "\"abc-3\"", "abc-3"), ("ETag", "W/\"x\"", "W/\"x\""), ("ETag", "bare", "bare"),
        ])
    func entityTag(name: String, value: String, expected: String) {
        let result = UploadResult(
            statusCode: 201, headers: [("Date", "today"), (name, value)], body: Data(), bytesSent: 5)
        #expect(result.entityTag == expected)
    }

    @Test("an HTTP answer without ETag: no entity tag, and the object store's fields at their defaults")
    func httpDefaults() {
        let result = UploadResult(statusCode: 204, headers: [("Date", "today")], body: Data(), bytesSent: 7)
        #expect(result.entityTag == nil && result.location == nil && result.objectSize == nil)
        #expect(result.parts == 0 && result.partsSent == 0 && result.uploadID == nil)
        #expect(result.checksum == nil && result.checksumAlgorithm == nil && !result.checksumStored)
        #expect(result.bytesSent == 7)
    }

    @Test("a body's name is kept by probingLength and by starting(at:), which also moves the bytes")
    func bodyName() async throws {
        let bytes = sampleBytes(1000)
        let plain = UploadBody(length: 1000) { DataBytesSource(bytes) }
        #expect(plain.name == nil)
        let probed = try UploadBody.probingLength(name: "/data/a.bin") { DataBytesSource(bytes) }
        #expect(probed.name == "/data/a.bin" && probed.length == 1000)
        let rest = try probed.starting(at: 400)
        #expect(rest.name == "/data/a.bin" && rest.length == 600)
        let stream = BlobInputStream(dataSource: try rest.makeSource(), mode: .synchronous)
        stream.open()
        defer { stream.close() }
        var read = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let n = stream.read(&buffer, maxLength: buffer.count), n > 0 {
            read.append(contentsOf: buffer[0..<n])
        }
        #expect(read == bytes.suffix(600))
    }
}
