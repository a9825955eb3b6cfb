import AsyncHTTPClient
import BlobStream
import BlobStreamArchive
import BlobStreamAssets
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamHTTPClient
import BlobStreamNetworking
import BlobStreamTestSupport
import Crypto
import Foundation
import NginxTestServer
import SampleAssetLibrary
import Testing

func sha256(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

func sampleBytes(_ count: Int, seed: UInt64 = 11) -> Data { TestData.pseudoRandom(count, seed: seed) }

struct SampleError: Error, CustomStringConvertible {
    var description: String { "the sample source broke" }
}

typealias ProgressLog = ConcurrentLog<UploadProgress>

/// Runs a command and fails the test when it fails.
func run(_ arguments: [String], in folder: URL) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.currentDirectoryURL = folder
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw BlobStreamError(.ioFailed, "\(arguments.joined(separator: " ")) failed")
    }
}

@Suite("AsyncHTTPClient uploads to nginx on 127.0.0.1", .serialized)
final class HTTPClientUploadTests {
    let server: NginxTestServer
    let folder: URL
    let registry = DataSourceRegistry()

    init() throws {
        server = try NginxTestServer()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("ahc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        FileSources.register(in: registry)
        GzipSources.register(in: registry)
        ArchiveSources.register(in: registry)
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    func put(
        _ body: UploadBody, _ path: String, mode: BlobInputStream.Mode = .synchronous,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws {
        let upload = HTTPClientUploader(mode: mode).upload(body, to: "\(server.baseURL)/files/\(path)")
        for await report in upload.progress { progress?(report) }
        _ = try await upload.result
    }

    func body(_ url: String) throws -> UploadBody {
        let registry = self.registry
        return try .probingLength { try registry.makeSource(url: url) }
    }

    @Test(
        "a file, with its length (Content-Length) and progress reaching it exactly once",
        arguments: [
            BlobInputStream.Mode.synchronous, .asynchronous,
        ])
    func file(mode: BlobInputStream.Mode) async throws {
        let bytes = sampleBytes(5_000_123)
        let path = folder.appendingPathComponent("video.mov")
        try bytes.write(to: path)
        let body = try body(BlobURL.fileURL(path: path.path))
        #expect(body.length == Int64(bytes.count))
        let log = ProgressLog()
        try await put(body, "video-\(mode).mov", mode: mode, progress: log.add)
        #expect(server.stored("video-\(mode).mov").map(sha256) == sha256(bytes))
        #expect(log.all.filter(\.isFinished).count == 1)
        #expect(log.all.last == UploadProgress(sent: Int64(bytes.count), total: Int64(bytes.count), isFinished: true))
    }

    @Test("a gzip payload (unknown length: chunked) and an archive member")
    func gzipAndArchive() async throws {
        let text = Data(String(repeating: "BlobStream uploads without temporary files.\n", count: 50_000).utf8)
        try text.write(to: folder.appendingPathComponent("log.txt"))
        try run(["gzip", "-k", "-n", "log.txt"], in: folder)
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("DCIM"), withIntermediateDirectories: true)
        let photo = sampleBytes(300_000, seed: 5)
        try photo.write(to: folder.appendingPathComponent("DCIM/IMG_0001.JPG"))
        try run(["tar", "-czf", "photos.tar.gz", "DCIM", "log.txt.gz"], in: folder)

        let gz = try body("gzip:" + BlobURL.fileURL(path: folder.appendingPathComponent("log.txt.gz").path))
        #expect(gz.length == nil)
        try await put(gz, "log.txt")
        #expect(server.stored("log.txt").map(sha256) == sha256(text))

        let archive = BlobURL.fileURL(path: folder.appendingPathComponent("photos.tar.gz").path)
        for mode in [BlobInputStream.Mode.synchronous, .asynchronous] {
            try await put(try body("archive:" + archive + "!/DCIM/IMG_0001.JPG"), "IMG_0001-\(mode).JPG", mode: mode)
            #expect(server.stored("IMG_0001-\(mode).JPG").map(sha256) == sha256(photo))
        }
        // gzip inside an archive, through the URL grammar
        try await put(try body("gzip:archive:" + archive + "!/log.txt.gz"), "log2.txt")
        #expect(server.stored("log2.txt").map(sha256) == sha256(text))
    }

    @Test("an asset from a photo library, edited rendition, both modes")
    func asset() async throws {
        let root = folder.appendingPathComponent("library")
        try DirectoryAssetLibrary.writeSampleLibrary(at: root)
        let library = DirectoryAssetLibrary(root: root)
        AssetSources.register(in: registry, library: library)
        for entry in try library.assets() {
            let expected = try #require(
                FileManager.default.contents(
                    atPath:
                        root.appendingPathComponent((entry.isEdited ? "renders/" : "originals/") + entry.relativePath)
                        .path))
            for mode in [BlobInputStream.Mode.synchronous, .asynchronous] {
                let name = "assets/\(entry.id)-\(mode)"
                try await put(try body(entry.url), name, mode: mode)
                #expect(server.stored(name).map(sha256) == sha256(expected), "\(entry.relativePath)")
            }
        }
    }

    @Test("a source failing mid-way: an error naming the cause, no complete-looking file")
    func failingSource() async throws {
        let bytes = sampleBytes(3_000_000)
        for length in [Int64(bytes.count), nil] {
            let body = UploadBody(length: length) {
                InMemoryDataSource(data: bytes, failAt: (1_500_000, SampleError()), chunkSize: 65_536)
            }
            do {
                try await put(body, "broken.bin")
                Issue.record("the upload succeeded")
            } catch let error as BlobStreamError {
                #expect(error.code == .uploadFailed)
                #expect("\(error)".contains("the sample source broke"), "\(error)")
            }
            let stored = server.stored("broken.bin")
            #expect(stored == nil || stored!.count < bytes.count)
        }
    }

    @Test("the server refusing, closing, or not listening: clear errors")
    func refused() async throws {
        let body = UploadBody(length: 5) { DataBytesSource(Data("hello".utf8)) }
        await #expect {
            _ = try await HTTPClientUploader().upload(body, to: "\(self.server.baseURL)/deny/x").result
        } throws: { "\($0)".contains("403") && "\($0)".contains("/deny/x") }
        await #expect {
            _ = try await HTTPClientUploader().upload(body, to: "\(self.server.baseURL)/slow-close/x").result
        } throws: { ($0 as? BlobStreamError)?.code == .uploadFailed && "\($0)".contains("/slow-close/x") }
        // Nobody listening: AsyncHTTPClient retries connecting until its connect timeout.
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(timeout: .init(connect: .seconds(2))))
        let port = try NginxTestServer.freePort()
        await #expect {
            _ = try await HTTPClientUploader(client: client).upload(body, to: "http://127.0.0.1:\(port)/x").result
        } throws: { ($0 as? BlobStreamError)?.code == .uploadFailed && "\($0)".contains("127.0.0.1:\(port)") }
        try await client.shutdown()
    }

    @Test("multipart through AsyncHTTPClient, exact Content-Length, parsed by Werkzeug")
    func multipart() async throws {
        let photo = sampleBytes(123_457, seed: 9)
        var form = MultipartBody()
        form.addField(name: "title", value: "IMG_0001")
        form.addFile(
            name: "file", filename: "IMG_0001.JPG", contentType: "image/jpeg",
            body: UploadBody(length: Int64(photo.count)) { DataBytesSource(photo) })
        let body = form.uploadBody
        try await put(body, "form.bin")
        let stored = try #require(server.stored("form.bin"))
        #expect(Int64(stored.count) == body.length)
        let parsed = try parseWithWerkzeug(stored, contentType: form.contentType)
        #expect(parsed.fields == ["title": ["IMG_0001"]])
        #expect(parsed.files["file"] == [.init(filename: "IMG_0001.JPG", type: "image/jpeg", sha256: sha256(photo))])
    }
}
