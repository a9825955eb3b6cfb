import BlobStream
import BlobStreamFiles
import BlobStreamNetworking
import BlobStreamTestSupport
import Crypto
import Foundation
import NginxTestServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

func sha256(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

func sampleBytes(_ count: Int, seed: UInt64 = 7) -> Data { TestData.pseudoRandom(count, seed: seed) }

struct SampleError: Error, CustomStringConvertible {
    var description: String { "the sample source broke" }
}

typealias ProgressLog = ConcurrentLog<UploadProgress>

@Suite("URLSession uploads to nginx on 127.0.0.1", .serialized)
final class URLSessionUploadTests {
    let server: NginxTestServer

    init() throws { server = try NginxTestServer() }
    deinit { server.stop() }

    func url(_ path: String) -> URL { URL(string: "\(server.baseURL)/\(path)")! }

    @Test("a file is stored byte-exact, with progress reaching the length exactly once")
    func file() async throws {
        let bytes = sampleBytes(3 * 1024 * 1024 + 17)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString).bin").path
        try bytes.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let body = try UploadBody.probingLength { FileDataSource(path: path) }
        #expect(body.length == Int64(bytes.count))
        let log = ProgressLog()
        let upload = URLSessionUploader().upload(body, to: url("files/a/file.bin"))
        for await report in upload.progress { log.add(report) }
        let response = try await upload.result
        #expect((200..<300).contains(response.statusCode))
        #expect(server.stored("a/file.bin").map(sha256) == sha256(bytes))
        let finished = log.all.filter(\.isFinished)
        #expect(finished.count == 1)
        #expect(finished.first?.sent == Int64(bytes.count))
        #expect(log.all.last?.isFinished == true)
        #expect(zip(log.all, log.all.dropFirst()).allSatisfy { $0.sent <= $1.sent }, "\(log.all)")
    }

    @Test("a source whose bytes arrive later on a queue: hasBytesAvailable waits, nothing is cut short")
    func slowSource() async throws {
        let bytes = sampleBytes(300_000)
        let queue = DispatchQueue(label: "slow-upload")
        let body = UploadBody(length: nil) {
            InMemoryDataSource(
                data: bytes, open: .async(queue: queue, delay: 0.05), chunkSize: 7000, refillDelay: (queue, 0.001))
        }
        _ = try await URLSessionUploader().upload(body, to: url("files/slow.bin")).result
        #expect(server.stored("slow.bin").map(sha256) == sha256(bytes))
    }

    @Test("a source failing mid-way: the client reports the error, the server holds no complete-looking file")
    func failingSource() async throws {
        let bytes = sampleBytes(2_000_000)
        let body = UploadBody(length: Int64(bytes.count)) {
            InMemoryDataSource(data: bytes, failAt: (1_000_000, SampleError()), chunkSize: 65_536)
        }
        do {
            _ = try await URLSessionUploader().upload(body, to: url("files/broken.bin")).result
            Issue.record("the upload succeeded")
        } catch let error as BlobStreamError {
            #expect(error.code == .uploadFailed)
            #expect(error.description.contains("the sample source broke"))
            #expect(error.description.contains("/files/broken.bin"))
        }
        let stored = server.stored("broken.bin")
        #expect(stored == nil || stored!.count < bytes.count, "a complete-looking file was stored")
    }

    @Test("the server refusing (403) or closing the connection is a clear error")
    func refused() async throws {
        let body = UploadBody(length: 5) { DataBytesSource(Data("hello".utf8)) }
        await #expect {
            _ = try await URLSessionUploader().upload(body, to: self.url("deny/x")).result
        } throws: { error in
            (error as? BlobStreamError)?.code == .uploadFailed && "\(error)".contains("403")
        }
        await #expect {
            _ = try await URLSessionUploader().upload(body, to: self.url("slow-close/x")).result
        } throws: { error in
            (error as? BlobStreamError)?.code == .uploadFailed && "\(error)".contains("/slow-close/x")
        }
        // Nobody listening.
        let closedPort = try NginxTestServer.freePort()
        await #expect {
            _ = try await URLSessionUploader().upload(body, to: "http://127.0.0.1:\(closedPort)/x").result
        } throws: { error in
            (error as? BlobStreamError)?.code == .uploadFailed
        }
    }

    @Test("the body stream itself: open twice, hasBytesAvailable false only at the end, -1 after an error")
    func bodyStreamContract() throws {
        let bytes = sampleBytes(100_000)
        let stream = URLSessionBodyStream(dataSource: InMemoryDataSource(data: bytes, chunkSize: 9000))
        stream.open()
        stream.open()
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 65_524)
        while stream.hasBytesAvailable {
            let n = stream.read(&buffer, maxLength: buffer.count)
            #expect(n > 0)
            out.append(buffer, count: max(n, 0))
        }
        #expect(out == bytes)
        #expect(stream.streamStatus == .atEnd)

        let failing = URLSessionBodyStream(
            dataSource: InMemoryDataSource(data: bytes, failAt: (50_000, SampleError()), chunkSize: 9000))
        failing.open()
        var got = 0
        var last = 0
        while failing.hasBytesAvailable {
            last = failing.read(&buffer, maxLength: buffer.count)
            if last < 0 { break }
            got += last
        }
        #expect(got == 50_000)
        #expect(last == -1, "an error must surface as -1, never as the end")
        #expect(failing.streamError != nil)
    }
}
