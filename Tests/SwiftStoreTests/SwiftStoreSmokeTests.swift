import Crypto
import Foundation
import SwiftStoreTestServer
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Deterministic bytes (not all equal, so a damaged or misplaced byte shows).
func patternBytes(_ count: Int, seed: UInt64 = 1) -> Data {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    var bytes = [UInt8](repeating: 0, count: count)
    for i in 0..<count {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        bytes[i] = UInt8(truncatingIfNeeded: state)
    }
    let data = Data(bytes)
    return data
}

func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }
func md5(_ data: Data) -> String { Insecure.MD5.hash(data: data).map { String(format: "%02x", $0) }.joined() }

/// An HTTP exchange with the store, outside the helper under test.
func send(_ request: URLRequest) async throws -> (Int, String) {
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
}

@Suite("The shared Swift store")
struct SharedSwiftStoreTests {
    @Test("bytes put with a tempauth token come back the same, with the md5 as ETag")
    func tempauthPutThenGet() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let bucket = SwiftStoreTestServer.uniqueBucketName("smoke")
        let body = patternBytes(3 * 1024 * 1024 + 17)
        try await store.swiftAPI.createContainer(bucket)
        let etag = try await store.swiftAPI.put(bucket, "dir/a file.bin", body)
        #expect(etag == md5(body))

        let fetched = try await store.swiftAPI.get(bucket, "dir/a file.bin")
        #expect(fetched.status == 200)
        #expect(sha256(fetched.body) == sha256(body))
        let listed = try #require(try await store.swiftAPI.list(bucket))
        #expect(listed.map(\.name) == ["dir/a file.bin"])
        #expect(listed.map(\.bytes) == [body.count])
        #expect(listed.map(\.hash) == [md5(body)])
        #expect(try await store.swiftAPI.list(bucket, prefix: "dir/").map { $0.map(\.name) } == ["dir/a file.bin"])
        #expect(try await store.swiftAPI.list(bucket, prefix: "other/") == [])
        #expect(try await store.swiftAPI.list(bucket + "+segments") == nil)
        #expect(try await store.swiftAPI.get(bucket, "absent").status == 404)
        #expect(try await store.swiftAPI.containers().contains(bucket))
        try await store.swiftAPI.delete(bucket, "dir/a file.bin")
        #expect(try await store.swiftAPI.get(bucket, "dir/a file.bin").status == 404)
        #expect(try await store.swiftAPI.list(bucket) == [])
    }

    @Test("a badly signed S3 request gets S3's XML error: s3api is in the pipeline")
    func s3apiAnswersWithErrorDocuments() async throws {
        let store = try await SwiftStoreTestServer.shared()
        let now = Date()
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let amzDate = formatter.string(from: now)
        var request = URLRequest(url: URL(string: store.endpoint + "/some-bucket/key")!)
        request.setValue(amzDate, forHTTPHeaderField: "x-amz-date")
        request.setValue("UNSIGNED-PAYLOAD", forHTTPHeaderField: "x-amz-content-sha256")
        request.setValue(
            "AWS4-HMAC-SHA256 Credential=\(store.accessKey)/\(amzDate.prefix(8))/\(store.region)/s3/aws4_request, "
                + "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + String(repeating: "0", count: 64),
            forHTTPHeaderField: "Authorization")
        let (status, body) = try await send(request)
        #expect(status == 403)
        #expect(body.contains("<Code>SignatureDoesNotMatch</Code>"), "\(body)")
    }

    @Test("tempauth refuses a wrong key")
    func tempauthRefusesWrongKey() async throws {
        let store = try await SwiftStoreTestServer.shared()
        var request = URLRequest(url: URL(string: store.authURL)!)
        request.setValue(store.accessKey, forHTTPHeaderField: "X-Auth-User")
        request.setValue("wrong", forHTTPHeaderField: "X-Auth-Key")
        let (status, _) = try await send(request)
        #expect(status == 401)
    }
}

/// One store of its own for the whole life cycle: each start costs seconds of both cores,
/// which other suites' timing checks feel.
@Suite("A store of its own")
struct OwnSwiftStoreTests {
    @Test(
        "starts in bounded time; pause refuses connections; restart serves the same data on the same endpoint; stop leaves no process and no folder"
    )
    func lifeCycle() async throws {
        let store = try await SwiftStoreTestServer.start()
        defer { store.stop() }
        // The script's own bound is 60 s for the servers to answer, after a second or two of
        // configuration; measured on the thread that waited, not on the busy test pool.
        #expect(store.startupDuration < 75, "start took \(store.startupDuration) s")
        let firstPIDs = store.pids
        #expect(Set(firstPIDs.keys) == ["supervisor", "memcached", "account", "container", "object", "proxy"])
        for (name, pid) in firstPIDs {
            #expect(SwiftStoreTestServer.isRunning(pid), "\(name) (\(pid)) is not running")
        }
        let body = patternBytes(6 * 1024 * 1024, seed: 3)
        try await store.swiftAPI.createContainer("kept")
        try await store.swiftAPI.put("kept", "object", body)

        await store.pause()
        for (name, pid) in firstPIDs {
            #expect(!SwiftStoreTestServer.isRunning(pid), "\(name) (\(pid)) still runs while paused")
        }
        #expect(store.pids.isEmpty)
        await #expect(throws: (any Error).self) { _ = try await store.swiftAPI.get("kept", "object") }

        try await store.restart()
        let secondPIDs = store.pids
        #expect(Set(secondPIDs.values).isDisjoint(with: firstPIDs.values))
        let fetched = try await store.swiftAPI.get("kept", "object")
        #expect(fetched.status == 200)
        #expect(sha256(fetched.body) == sha256(body))
        await #expect(throws: SwiftStoreTestServer.Failure.self) { try await store.restart() }

        store.stop()
        for (name, pid) in secondPIDs {
            #expect(!SwiftStoreTestServer.isRunning(pid), "\(name) (\(pid)) still runs after stop")
        }
        #expect(store.pids.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: store.folder.path))
        var request = URLRequest(url: URL(string: store.authURL)!)
        request.timeoutInterval = 5
        await #expect(throws: (any Error).self) { _ = try await send(request) }
    }
}
