import BlobStream
import BlobStreamFiles
import Foundation
import NIOCore
import Testing

@testable import BlobStreamS3

@Suite("Part buffers used again")
struct PartBufferPoolTests {
    @Test("a buffer sent and given back is the next part's, empty")
    func reuse() {
        let pool = PartBufferPool()
        var buffer = pool.take(capacity: 1 << 20)
        buffer.writeBytes([UInt8](repeating: 7, count: 1 << 20))
        let storage = buffer.withVeryUnsafeBytes { $0.baseAddress }
        pool.recycle(consume buffer)
        let next = pool.take(capacity: 1 << 20)
        #expect(next.readableBytes == 0 && next.capacity >= 1 << 20)
        #expect(next.withVeryUnsafeBytes { $0.baseAddress } == storage)
        #expect(pool.made == 1 && pool.renewed == 0)
    }

    @Test("a buffer something still holds is never written over: the taker gets new storage")
    func stillHeld() {
        let pool = PartBufferPool()
        var buffer = pool.take(capacity: 4096)
        buffer.writeString("part one")
        let held = buffer
        pool.recycle(buffer)
        var next = pool.take(capacity: 4096)
        next.writeString("part two")
        #expect(held.getString(at: held.readerIndex, length: 8) == "part one")
        #expect(next.withVeryUnsafeBytes { $0.baseAddress } != held.withVeryUnsafeBytes { $0.baseAddress })
        #expect(pool.made == 1 && pool.renewed == 1)
    }

    @Test("a taker waits about 20 ms for a held buffer to be let go, then gets new storage")
    func heldWaitIsBounded() {
        let pool = PartBufferPool()
        var buffer = pool.take(capacity: 4096)
        buffer.writeString("part one")
        let held = buffer
        pool.recycle(buffer)
        let started = ContinuousClock.now
        let next = pool.take(capacity: 4096)
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(19) && waited < .seconds(2), "waited \(waited)")
        #expect(next.withVeryUnsafeBytes { $0.baseAddress } != held.withVeryUnsafeBytes { $0.baseAddress })
        #expect(pool.made == 1 && pool.renewed == 1)
    }

    @Test("every buffer taken starts on a 64-byte boundary, new or used again, and holds what it was asked for")
    func alignedStart() {
        let pool = PartBufferPool()
        for capacity in [1, 4096, 1 << 20, 8 << 20, 1 << 20] {
            var buffer = pool.take(capacity: capacity)
            #expect(buffer.readableBytes == 0 && buffer.writableBytes >= capacity)
            let start = buffer.withUnsafeMutableWritableBytes { Int(bitPattern: $0.baseAddress) }
            #expect(start % 64 == 0, "capacity \(capacity): start at \(start % 64) past a 64-byte boundary")
            buffer.writeBytes([UInt8](repeating: 3, count: capacity))
            #expect(buffer.readableBytesView.allSatisfy { $0 == 3 } && buffer.readableBytes == capacity)
            pool.recycle(buffer)
        }
    }

    @Test("a larger part than the kept buffer holds gets the room it needs")
    func grows() {
        let pool = PartBufferPool()
        pool.recycle(pool.take(capacity: 1024))
        var next = pool.take(capacity: 1 << 16)
        #expect(next.capacity >= 1 << 16)
        next.writeBytes([UInt8](repeating: 1, count: 1 << 16))
        #expect(next.readableBytes == 1 << 16)
    }
}

@Suite("S3 uploads reuse their part buffers (OpenStack Swift's S3 API)", .serialized)
struct S3PartBufferUploadTests {
    static let partSize = 5 << 20

    /// Runs one upload of `source` and returns the upload (its buffers) and the result.
    func upload(_ fixture: StoreFixture, _ source: UploadBody, key: String, parallelism: Int) async throws
        -> (S3MultipartUpload, UploadResult)
    {
        let upload = S3MultipartUpload(
            client: fixture.client, uploadBody: source, location: fixture.location(key),
            options: S3UploadOptions(partSize: Self.partSize, parallelism: parallelism), progress: { _ in })
        return (upload, try await upload.run())
    }

    @Test(
        "a file in parts: the object is the file, at most `parallelism` buffers made",
        arguments: [
            (2 * 5 << 20, 2, 1), // two whole parts, one at a time
            (7 * 5 << 20 + 4321, 7 + 1, 2), // a short last part
            (9 * 5 << 20 - 1, 9, 3), // the last part one byte short
        ])
    func file(size: Int, parts: Int, parallelism: Int) async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let (path, data) = try fixture.file("parts", count: size, seed: UInt64(size))
        let (upload, result) = try await upload(fixture, fixture.fileSource(path), key: "f", parallelism: parallelism)
        #expect(result.parts == parts && result.objectSize == Int64(size))
        #expect(sha256Hex(try await fixture.stored("f")) == sha256Hex(data))
        #expect(upload.buffers.made <= parallelism)
    }

    @Test("a pipe in parts: the object is what was written, at most `parallelism` + 1 buffers made")
    func pipe() async throws {
        let fixture = try await StoreFixture()
        defer { fixture.cleanUp() }
        let data = StoreFixture.bytes(8 * Self.partSize + 99, seed: 9)
        let pipe = Pipe()
        let writer = Thread {
            pipe.fileHandleForWriting.write(data)
            try? pipe.fileHandleForWriting.close()
        }
        writer.start()
        let handle = pipe.fileHandleForReading
        let source = UploadBody(length: nil, repeatable: false, name: "pipe") {
            FileHandleDataSource(fileHandle: handle)
        }
        let (upload, result) = try await upload(fixture, source, key: "p", parallelism: 2)
        #expect(result.parts == 9 && result.objectSize == Int64(data.count))
        #expect(sha256Hex(try await fixture.stored("p")) == sha256Hex(data))
        #expect(upload.buffers.made <= 3)
    }
}
