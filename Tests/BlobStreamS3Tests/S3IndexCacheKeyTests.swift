import BlobStream
import BlobStreamCompression
import BlobStreamGzip
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NginxTestServer
import Testing

/// The index cache keys an `s3://bucket/key` object by the store it is read from too: two
/// stores (endpoints) holding the same bucket and key never share a kept index.
@Suite("Index cache: the store is part of the key")
struct S3IndexCacheKeyTests {
    static func configuration(_ endpoint: String) -> S3Configuration {
        S3Configuration(
            credentials: S3Credentials(accessKeyID: "test", secretAccessKey: "secret"), region: "us-east-1",
            endpoint: URL(string: endpoint)!, usesPathStyle: true)
    }

    @Test("an index kept for s3://b/k.gz on one store is not used for s3://b/k.gz on another (same size and ETag)")
    func endpointInKey() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("index-cache-key-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = IndexCache(folder: folder.path)
        let (gz, _) = try S3GzipIndexTests.gzipObject(300_000, seed: 7)
        let tag = "\"same-version\""
        // Store A holds the object and its index beside it; store B the same object (same
        // bytes, size and ETag) and no index.
        let storeA = try MisbehavingHTTPPeer()
        defer { storeA.stop() }
        let storeB = try MisbehavingHTTPPeer()
        defer { storeB.stop() }
        storeA.serve(gz, at: "/b/k.gz", entityTag: tag)
        storeB.serve(gz, at: "/b/k.gz", entityTag: tag)
        let url = "s3://b/k.gz"
        let a = Self.configuration(storeA.url(""))
        let b = Self.configuration(storeB.url(""))
        let index = try await offThePool { () throws -> GzipIndex in
            let object = try S3Sources.makeSource(url: url, configuration: a)
            defer { object.close() }
            object.open()
            var index = try GzipIndex.build(from: object, spacing: 64 << 10, name: url)
            index.identity = try object.contentIdentity()
            return index
        }
        storeA.serve(Data(index.serialized()), at: "/b/k.gz.gzidx", entityTag: "\"index\"")

        /// What a lookup with the cache finds for the object on the store `configuration` names.
        func lookUp(_ configuration: S3Configuration) async throws -> String {
            try await offThePool { () throws -> String in
                let object = try S3Sources.makeSource(url: url, configuration: configuration)
                defer { object.close() }
                object.open()
                let found = try GzipIndex.lookUp(for: object, at: url, cache: cache) {
                    try S3Sources.makeSource(url: $0, configuration: configuration)
                }
                switch found {
                case .matching(let index): return "matching \(index.points.count)"
                case .absent: return "absent"
                case .unusable(let reason): return "unusable: \(reason)"
                }
            }
        }
        // On A: the index beside the object is used and kept in the cache.
        #expect(try await lookUp(a) == "matching \(index.points.count)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).count == 1)
        // On B: no index beside the object, and the copy kept for A's object is not B's.
        #expect(try await lookUp(b) == "absent")
    }
}
