import BlobStream
import BlobStreamFiles
import BlobStreamNetworking
import BlobStreamTestSupport
import Foundation
import NginxTestServer
import Testing

/// Parses a stored multipart body with Werkzeug (a well-kept parser, not one written here)
/// and prints one JSON object: fields, and files with filename, content type and sha256.
let werkzeugParser = #"""
import hashlib, io, json, sys
from werkzeug.formparser import parse_form_data
body = open(sys.argv[1], "rb").read()
env = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": sys.argv[2], "CONTENT_LENGTH": str(len(body)),
       "wsgi.input": io.BytesIO(body)}
_, form, files = parse_form_data(env)
print(json.dumps({
    "fields": {k: form.getlist(k) for k in form.keys()},
    "files": {k: [{"filename": f.filename, "type": f.mimetype,
                   "sha256": hashlib.sha256(f.read()).hexdigest()} for f in files.getlist(k)] for k in files.keys()},
}, sort_keys=True))
"""#

struct ParsedForm: Decodable {
    struct File: Decodable, Equatable {
        let filename: String
        let type: String
        let sha256: String
    }
    let fields: [String: [String]]
    let files: [String: [File]]
}

func parseWithWerkzeug(_ body: Data, contentType: String) throws -> ParsedForm {
    let folder = FileManager.default.temporaryDirectory
    let bodyFile = folder.appendingPathComponent("multipart-\(UUID().uuidString)")
    let script = folder.appendingPathComponent("parse-\(UUID().uuidString).py")
    try body.write(to: bodyFile)
    try werkzeugParser.write(to: script, atomically: true, encoding: .utf8)
    defer {
        try? FileManager.default.removeItem(at: bodyFile)
        try? FileManager.default.removeItem(at: script)
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script.path, bodyFile.path, contentType]
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return try JSONDecoder().decode(ParsedForm.self, from: data)
}

@Suite("Multipart bodies", .serialized)
final class MultipartTests {
    let server: NginxTestServer
    init() throws { server = try NginxTestServer() }
    deinit { server.stop() }

    @Test("fields and files, exact length known up front, parsed back by Werkzeug")
    func knownLength() async throws {
        let photo = sampleBytes(250_000, seed: 1), video = sampleBytes(1_000_001, seed: 2)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("video-\(UUID().uuidString).mov").path
        try video.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }

        var form = MultipartBody()
        form.addField(name: "album", value: "Été 2026 — holidays")
        form.addFile(name: "photo", filename: "IMG_0001.JPG", contentType: "image/jpeg",
                     body: UploadBody(length: Int64(photo.count)) { DataBytesSource(photo) })
        form.addFile(name: "video", filename: "weird \"name\".mov", contentType: "video/quicktime",
                     body: try .probingLength { FileDataSource(path: path) })
        let body = form.uploadBody
        let length = try #require(body.length)

        _ = try await URLSessionUpload.upload(body, to: URL(string: "\(server.baseURL)/files/form.bin")!)
        let stored = try #require(server.stored("form.bin"))
        #expect(Int64(stored.count) == length, "the computed length is exact")

        let parsed = try parseWithWerkzeug(stored, contentType: form.contentType)
        #expect(parsed.fields == ["album": ["Été 2026 — holidays"]])
        #expect(parsed.files["photo"] == [.init(filename: "IMG_0001.JPG", type: "image/jpeg", sha256: sha256(photo))])
        #expect(parsed.files["video"] == [.init(filename: "weird \"name\".mov", type: "video/quicktime", sha256: sha256(video))])
    }

    @Test("a part of unknown length: no total, the body still parses")
    func unknownLength() async throws {
        let payload = sampleBytes(70_000, seed: 3)
        var form = MultipartBody()
        form.addFile(name: "data", filename: "stream.bin", body: UploadBody(length: nil) {
            InMemoryDataSource(data: payload, chunkSize: 4000)
        })
        form.addField(name: "after", value: "yes")
        #expect(form.uploadBody.length == nil)
        _ = try await URLSessionUpload.upload(form.uploadBody, to: URL(string: "\(server.baseURL)/files/form2.bin")!)
        let parsed = try parseWithWerkzeug(try #require(server.stored("form2.bin")), contentType: form.contentType)
        #expect(parsed.files["data"]?.first?.sha256 == sha256(payload))
        #expect(parsed.fields["after"] == ["yes"])
    }
}
