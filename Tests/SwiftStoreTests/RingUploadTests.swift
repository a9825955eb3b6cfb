import BlobStream
import BlobStreamArchive
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamUpload
import Foundation
import Glibc
import SwiftStoreTestServer
import Testing

/// Multipart uploads and member reads on the ring while its object servers fail. In the
/// suite of `RingFailoverTests` (one test at a time: they kill the same nodes).
extension RingFailoverTests {
    var s3: S3Client {
        S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: store.accessKey, secretAccessKey: store.secretKey),
                region: store.region, endpoint: URL(string: store.endpoint)!))
    }

    /// A 16 MiB upload in 5 MiB parts, 2 at a time; `strike` runs once, when the first
    /// bytes have been sent (parts are in flight).
    func uploadStruck(
        _ data: Data, key: String, options: S3UploadOptions, strike: @escaping @Sendable () -> Void
    ) async -> Result<UploadResult, any Error> {
        let body = UploadBody(length: Int64(data.count), name: key) { DataBytesSource(data) }
        let upload = S3Uploader(client: s3).upload(body, to: S3Location(bucket: bucket, key: key), options: options)
        let struck = Once()
        for await report in upload.progress where report.sent > 0 && struck.first() {
            strike()
        }
        do {
            return .success(try await upload.result)
        } catch {
            return .failure(error)
        }
    }

    @Test("one object server killed mid-upload: the multipart upload ends whole (a PUT needs two of three)")
    func uploadWithOneNodeKilled() async throws {
        try await withNodesRestored {
            let data = patternBytes(16 << 20 | 777, seed: 44)
            let victim = try #require(store.objectServers.first)
            let result = try await uploadStruck(
                data, key: "one-down.bin", options: S3UploadOptions(partSize: 5 << 20, parallelism: 2)
            ) { store.signal(SIGKILL, [victim]) }.get()
            #expect(!SwiftStoreTestServer.isRunning(victim.pid))
            #expect(result.parts == 4)
            let stored = try await store.swiftAPI.get(bucket, "one-down.bin")
            #expect(sha256(stored.body) == sha256(data))
        }
    }

    @Test(
        "two object servers killed mid-upload: an error naming the store's 503, the upload left open; resumed once they are back, whole"
    )
    func uploadWithTwoNodesKilledThenResumed() async throws {
        try await withNodesRestored {
            let data = patternBytes(16 << 20 | 999, seed: 45)
            let victims = Array(store.objectServers.prefix(2))
            var options = S3UploadOptions(
                partSize: 5 << 20, parallelism: 2,
                retry: HTTPRetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(50)), abortsOnFailure: false)
            let failed = await uploadStruck(data, key: "two-down.bin", options: options) {
                store.signal(SIGKILL, victims)
            }
            guard case .failure(let failure) = failed else {
                Issue.record("an upload with two of three nodes down was reported whole")
                return
            }
            let error = try #require(failure as? BlobStreamError, "\(failure)")
            #expect(error.description.contains("503"), "the store's answer: \(error)")
            #expect(error.description.contains("two-down.bin"), "\(error)")
            try await store.revive()
            // Nothing of it is an object yet.
            #expect(try await store.swiftAPI.get(bucket, "two-down.bin").status == 404)
            options.resume = .latest
            let body = UploadBody(length: Int64(data.count), name: "two-down.bin") { DataBytesSource(data) }
            let result = try await S3Uploader(client: s3).upload(
                body, to: S3Location(bucket: bucket, key: "two-down.bin"), options: options
            ).result
            #expect(result.parts == 4)
            #expect(result.partsSent < 4, "parts stored before the fault are not sent again")
            let stored = try await store.swiftAPI.get(bucket, "two-down.bin")
            #expect(sha256(stored.body) == sha256(data))
        }
    }

    /// A small tar of 3 members on the ring.
    static func smallTar() throws -> (tar: Data, member: Data) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ring-tar-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let member = patternBytes(20_000, seed: 46)
        try patternBytes(30_000, seed: 47).write(to: folder.appendingPathComponent("a.bin"))
        try member.write(to: folder.appendingPathComponent("m.bin"))
        try patternBytes(30_000, seed: 48).write(to: folder.appendingPathComponent("z.bin"))
        let tar = Process()
        tar.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        tar.arguments = ["tar", "-cf", "small.tar", "-C", folder.path, "a.bin", "m.bin", "z.bin"]
        tar.currentDirectoryURL = folder
        try tar.run()
        tar.waitUntilExit()
        #expect(tar.terminationStatus == 0)
        return (try Data(contentsOf: folder.appendingPathComponent("small.tar")), member)
    }

    @Test("a small member read with one object server stopped (SIGSTOP): whole every time, within seconds")
    func memberReadWithNodeStopped() async throws {
        try await withNodesRestored {
            let (tar, member) = try Self.smallTar()
            _ = try await store.swiftAPI.put(bucket, "small.tar", tar)
            let url = store.storageURL + "/\(bucket)/small.tar"
            let victim = try #require(store.objectServers.first)
            store.signal(SIGSTOP, [victim])
            // The proxy picks a replica at random for each GET: six reads meet the stopped
            // node about twice with no hedge (2 s each, the proxy's node timeout).
            for round in 0..<6 {
                let read = await readMember(url, "m.bin")
                #expect(read.error == nil, "round \(round): \(String(describing: read.error))")
                #expect(sha256(read.data) == sha256(member), "round \(round)")
                #expect(read.seconds < 5, "round \(round): \(read.seconds) s")
            }
        }
    }

    /// Reads `member` of the tar at `url` (Swift's API, with the token) whole, on a thread of
    /// its own; the bytes, the error and the seconds it took.
    func readMember(_ url: String, _ member: String) async -> Download {
        await readMemberOffThePool(url, member, token: token)
    }
}

/// Reads `member` of the tar at `url` (Swift's API, with `token`) whole, on a thread of its
/// own; the bytes, the error and the seconds it took.
func readMemberOffThePool(_ url: String, _ member: String, token: String, hedging: Bool = true) async -> Download {
    await withCheckedContinuation { continuation in
        Thread {
            let started = Date()
            var options = HTTPRangeOptions(
                blockSize: 256 << 10, connection: HTTPConnectionOptions(),
                prepare: { $0.headers.replaceOrAdd(name: "X-Auth-Token", value: token) },
                retry: HTTPRetryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(400)))
            if !hedging { options.hedging = nil }
            let upstream = HTTPRangeDataSource(url: URL(string: url)!, options: options)
            let source = ArchiveMemberDataSource(archive: upstream, member: member, name: url)
            let stream = BlobInputStream(dataSource: source)
            stream.open()
            let data = readAll(stream)
            let error = (stream.streamError as? BlobStreamError) ?? (source.error as? BlobStreamError)
            stream.close()
            continuation.resume(
                returning: Download(data: data, error: error, seconds: Date().timeIntervalSince(started)))
        }.start()
    }
}
