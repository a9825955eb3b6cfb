import BlobStream
import BlobStreamFiles
import BlobStreamNetworking
import BlobStreamTestSupport
import Foundation
import NginxTestServer
import Testing

@Suite("Multipart bodies", .serialized)
final class MultipartTests {
    let server: NginxTestServer
    init() throws { server = try NginxTestServer() }
    deinit { server.stop() }

    @Test("fields and files, exact length known up front, parsed back by Werkzeug")
    func knownLength() async throws {
        let photo = sampleBytes(250_000, seed: 1)
        let video = sampleBytes(1_000_001, seed: 2)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("video-\(UUID().uuidString).mov").path
        try video.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }

        var form = MultipartBody()
        form.addField(name: "album", value: "Été 2026 — holidays")
        form.addFile(
            name: "photo", filename: "IMG_0001.JPG", contentType: "image/jpeg",
            body: UploadBody(length: Int64(photo.count)) { DataBytesSource(photo) })
        form.addFile(
            name: "video", filename: "weird \"name\".mov", contentType: "video/quicktime",
            body: try .probingLength { FileDataSource(path: path) })
        let body = form.uploadBody
        let length = try #require(body.length)

        _ = try await URLSessionUploader().upload(body, to: "\(server.baseURL)/files/form.bin").result
        let stored = try #require(server.stored("form.bin"))
        #expect(Int64(stored.count) == length, "the computed length is exact")

        let parsed = try parseWithWerkzeug(stored, contentType: form.contentType)
        #expect(parsed.fields == ["album": ["Été 2026 — holidays"]])
        #expect(parsed.files["photo"] == [.init(filename: "IMG_0001.JPG", type: "image/jpeg", sha256: sha256(photo))])
        #expect(
            parsed.files["video"] == [
                .init(filename: "weird \"name\".mov", type: "video/quicktime", sha256: sha256(video))
            ])
    }

    @Test("a part of unknown length: no total, the body still parses")
    func unknownLength() async throws {
        let payload = sampleBytes(70_000, seed: 3)
        var form = MultipartBody()
        form.addFile(
            name: "data", filename: "stream.bin",
            body: UploadBody(length: nil) {
                InMemoryDataSource(data: payload, chunkSize: 4000)
            })
        form.addField(name: "after", value: "yes")
        #expect(form.uploadBody.length == nil)
        _ = try await URLSessionUploader().upload(form.uploadBody, to: "\(server.baseURL)/files/form2.bin").result
        let parsed = try parseWithWerkzeug(try #require(server.stored("form2.bin")), contentType: form.contentType)
        #expect(parsed.files["data"]?.first?.sha256 == sha256(payload))
        #expect(parsed.fields["after"] == ["yes"])
    }
}
