import BlobStream
import BlobStreamFiles
import BlobStreamS3
import Foundation
import NIOCore
import SwiftStoreTestServer
import Testing

/// Parts too large for one memory buffer (a `ByteBuffer` holds at most 4 GiB): from a file they
/// are hashed, then streamed from the file; from a pipe they are refused before any request.
/// A real part over 4 GiB takes too long for the tests, so the threshold is made small here
/// (`partsInMemoryUpTo`) and the streamed path runs with 5 MiB parts.
@Suite("S3 parts too large for one buffer", .serialized)
struct S3LargePartTests {
    /// A file source that counts the sources made from it (each part streamed from the file
    /// is read twice: hashed, then sent).
    final class CountingFile: Sendable {
        let path: String
        let made = Locked(0)
        init(_ path: String) { self.path = path }
        var source: UploadBody {
            UploadBody(length: nil, repeatable: true, name: path) { [self] in
                made.withLock { $0 += 1 }
                return FileDataSource(path: path)
            }
        }
    }

    @Test("parts above the threshold stream from the file: the stored object has the file's bytes")
    func streamedParts() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("big", count: 11 << 20 | 99, seed: 31)
        let file = CountingFile(path)
        var options = S3UploadOptions(partSize: 5 << 20, parallelism: 2)
        options.partsInMemoryUpTo = 1 << 20
        let result = try await S3Uploader(client: fixture.client).upload(
            file.source, to: fixture.location("streamed"), options: options
        ).result
        #expect(result.parts == 3 && result.partsSent == 3 && result.entityTag?.hasSuffix("-3") == true)
        #expect(result.objectSize == Int64(data.count))
        #expect(sha256Hex(try await fixture.stored("streamed")) == sha256Hex(data))
        // The first source, two per part (hash, send), the identity check before completing.
        let made: Int = file.made.withLock { $0 }
        #expect(made == 8)
    }

    @Test("a file above the threshold but within one part goes in one streamed PutObject")
    func streamedSinglePut() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("one", count: 3 << 20 | 7, seed: 32)
        var options = S3UploadOptions(partSize: 5 << 20)
        options.partsInMemoryUpTo = 1 << 20
        let result = try await S3Uploader(client: fixture.client).upload(
            CountingFile(path).source, to: fixture.location("single"), options: options
        ).result
        #expect(result.parts == 0 && result.uploadID == nil && result.objectSize == Int64(data.count))
        #expect(sha256Hex(try await fixture.stored("single")) == sha256Hex(data))
    }

    @Test("resuming with streamed parts sends only the parts not stored")
    func streamedPartsResumed() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("resumed", count: 11 << 20, seed: 33)
        let location = fixture.location("resumed")
        let id = try await fixture.client.createMultipartUpload(location)
        // Part 1 stored before, from memory: its ETag is its MD5, as a streamed part's digest gives.
        _ = try await fixture.client.uploadPart(
            location, uploadID: id, number: 1, body: ByteBuffer(bytes: data.prefix(5 << 20)))
        // The store's listing may lag behind: wait until it lists the part.
        _ = try await SwiftStoreTestServer.poll(upTo: .seconds(30)) {
            try await !fixture.client.listParts(location, uploadID: id).isEmpty
        }
        var options = S3UploadOptions(partSize: 5 << 20, parallelism: 1, resume: .uploadID(id))
        options.partsInMemoryUpTo = 1 << 20
        let result = try await S3Uploader(client: fixture.client).upload(
            CountingFile(path).source, to: location, options: options
        ).result
        #expect(result.parts == 3 && result.partsSent == 2)
        // The parts found stored count in the object's CRC-64/NVME as those sent do.
        var crc64 = S3Checksum(.crc64nvme)
        crc64.update(data)
        #expect(result.crc64nvme == crc64.base64)
        #expect(sha256Hex(try await fixture.stored("resumed")) == sha256Hex(data))
    }

    @Test("a pipe's part above the buffer limit: refused before any request, the limit named")
    func pipeOverLimit() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let pipe = Pipe()
        let handle = pipe.fileHandleForReading
        let source = UploadBody(length: nil, repeatable: false, name: "pipe") {
            FileHandleDataSource(fileHandle: handle)
        }
        var options = S3UploadOptions(partSize: 5 << 20)
        options.partsInMemoryUpTo = 1 << 20
        let started = Recorded(false)
        options.uploadStarted = { _ in started.value.withLock { $0 = true } }
        let error = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: fixture.client).upload(source, to: fixture.location("piped"), options: options)
                .result
        }
        try? pipe.fileHandleForWriting.close()
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("pipe cannot seek") == true, "\(String(describing: error))")
        #expect(error?.message.contains("one part buffer holds, 1048576 bytes") == true)
        #expect(started.value.withLock { $0 } == false)
        #expect(try await fixture.client.listMultipartUploads(fixture.location("piped")).isEmpty)
    }

    @Test("a part size over S3's 5 GiB is refused, naming the limit")
    func overS3Limit() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, _) = try fixture.file("small", count: 1000)
        let options = S3UploadOptions(partSize: S3UploadOptions.maximumPartSize + 1)
        let error = await #expect(throws: BlobStreamError.self) {
            try await S3Uploader(client: fixture.client).upload(
                fixture.fileSource(path), to: fixture.location("k"), options: options
            ).result
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("S3's largest part, 5368709120 bytes") == true)
    }
}

/// A value set from a closure the code under test calls.
final class Recorded<Value: Sendable>: Sendable {
    let value: Locked<Value>
    init(_ value: Value) { self.value = Locked(value) }
}
