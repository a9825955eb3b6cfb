import BlobStream
import BlobStreamCompression
import BlobStreamGzip
import BlobStreamHTTPClient
import BlobStreamS3
import Foundation
import NginxTestServer
import Testing

/// A gzip index beside an object on a store, sealed with a key (`IndexSeal`): used with the
/// key (and kept, sealed, in the index cache); with another key not used; a kept copy whose
/// seal does not verify is removed from the cache; without a key a sealed index is read by
/// range with the same requests as an unsealed one.
@Suite("Index seal: an index beside an object on a store")
struct S3IndexSealTests {
    static let key = try! IndexKey(bytes: [UInt8](repeating: 0x42, count: 32))
    static let otherKey = try! IndexKey(bytes: [UInt8](repeating: 0x24, count: 32))

    @Test("sealed KEY.gzidx: used with its key and kept in the cache; another key's not used; a bad kept copy removed")
    func besideAnObject() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("index-seal-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = IndexCache(folder: folder.path)
        let (gz, _) = try S3GzipIndexTests.gzipObject(300_000, seed: 11)
        let store = try MisbehavingHTTPPeer()
        defer { store.stop() }
        store.serve(gz, at: "/b/k.gz", entityTag: "\"v1\"")
        let url = "s3://b/k.gz"
        let configuration = S3IndexCacheKeyTests.configuration(store.url(""))
        let index = try await offThePool { () throws -> GzipIndex in
            let object = try S3Sources.makeSource(url: url, configuration: configuration)
            defer { object.close() }
            object.open()
            var index = try GzipIndex.build(from: object, spacing: 64 << 10, name: url)
            index.identity = try object.contentIdentity()
            return index
        }
        let plain = index.serialized()

        /// What a lookup finds with `key` (and `cache`), and the GETs of the index object it made.
        func lookUp(key: IndexKey?, cache: IndexCache? = nil) async throws -> (String, gets: Int) {
            let before = store.requests.filter { $0.path == "/b/k.gz.gzidx" }.count
            let found = try await offThePool { () throws -> String in
                // No hedges: a hedge on a loaded machine is one more GET, and the GETs are counted.
                var options = HTTPRangeOptions()
                options.hedging = nil
                let object = try S3Sources.makeSource(url: url, configuration: configuration, options: options)
                defer { object.close() }
                object.open()
                let found = try GzipIndex.lookUp(for: object, at: url, cache: cache, key: key) {
                    try S3Sources.makeSource(url: $0, configuration: configuration, options: options)
                }
                switch found {
                case .matching(let index): return "matching \(index.points.count)"
                case .absent: return "absent"
                case .unusable(let reason): return "unusable: \(reason)"
                }
            }
            return (found, store.requests.filter { $0.path == "/b/k.gz.gzidx" }.count - before)
        }

        // Without a key: a sealed index is read by range with the requests of an unsealed one.
        store.serve(Data(plain), at: "/b/k.gz.gzidx", entityTag: "\"i0\"")
        let unsealedRun = try await lookUp(key: nil)
        #expect(unsealedRun.0 == "matching \(index.points.count)")
        let sealed = index.sealing(plain, with: Self.key)
        store.serve(Data(sealed), at: "/b/k.gz.gzidx", entityTag: "\"i1\"")
        let sealedRun = try await lookUp(key: nil)
        #expect(sealedRun.0 == "matching \(index.points.count)")
        #expect(sealedRun.gets == unsealedRun.gets, "\(sealedRun.gets) GETs, \(unsealedRun.gets) unsealed")

        // With its key: used, and the sealed bytes kept in the cache.
        #expect(try await lookUp(key: Self.key, cache: cache).0 == "matching \(index.points.count)")
        let entries = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(entries.count == 1)
        let kept = folder.path + "/" + (try #require(entries.first))
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: kept))) == sealed)
        // The kept copy is used with no request for the index.
        #expect(try await lookUp(key: Self.key, cache: cache) == ("matching \(index.points.count)", 0))

        // Another key: the object beside is not used; the kept copy, sealed with that other
        // key, is removed from the cache.
        let other = try await lookUp(key: Self.otherKey)
        #expect(other.0.hasPrefix("unusable: ") && other.0.contains("does not verify"), "\(other.0)")
        store.serve(Data(index.sealing(plain, with: Self.otherKey)), at: "/b/k.gz.gzidx", entityTag: "\"i2\"")
        try Data(index.sealing(plain, with: Self.otherKey)).write(to: URL(fileURLWithPath: kept))
        let dropped = try await lookUp(key: Self.key, cache: cache)
        #expect(dropped.0.hasPrefix("unusable: ") && dropped.0.contains("does not verify"), "\(dropped.0)")
        #expect(!FileManager.default.fileExists(atPath: kept))
        // Named: refused.
        await #expect(throws: BlobStreamError.self) {
            try await offThePool { () throws -> Void in
                let object = try S3Sources.makeSource(url: url, configuration: configuration)
                defer { object.close() }
                object.open()
                _ = try GzipIndex.lookUp(for: object, at: url, indexURL: url + ".gzidx", key: Self.key) {
                    try S3Sources.makeSource(url: $0, configuration: configuration)
                }
            }
        }
    }
}
