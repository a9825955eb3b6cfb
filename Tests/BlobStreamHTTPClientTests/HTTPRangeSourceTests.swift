import AsyncHTTPClient
import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import NIOCore
import NginxTestServer
import Testing

/// `HTTPRangeDataSource` against nginx serving static files on 127.0.0.1 (HTTP and HTTPS
/// with a CA made by the test), a CONNECT proxy and a server that drops connections.
@Suite("HTTPRangeDataSource: ranged reads over http(s)", .serialized)
final class HTTPRangeSourceTests {
    let server: StaticFileServer
    /// Small blocks, so that a few hundred KiB take many GETs; no proxy, no extra roots
    /// (whatever the environment of the test run says); retries after 10-20 ms, not 1 s, so
    /// that a server that always drops fails in a second (the policy: RemoteReadFaultTests).
    let options = HTTPRangeOptions(
        blockSize: 64 << 10, connection: HTTPConnectionOptions(),
        retry: HTTPRetryPolicy(initialDelay: .milliseconds(20)))

    init() throws {
        server = try StaticFileServer()
    }
    deinit { server.stop() }

    var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/archives")
    }

    func source(_ url: String, _ options: HTTPRangeOptions? = nil) -> HTTPRangeDataSource {
        HTTPRangeDataSource(url: URL(string: url)!, options: options ?? self.options)
    }

    /// Reads `source` to its end from `offset` through a synchronous stream.
    func read(_ source: any BlobDataSource, from offset: Int64 = 0, chunk: Int = 10_000) throws -> (
        data: Data, last: Int, error: BlobStreamError?
    ) {
        let stream = BlobInputStream(dataSource: source)
        if offset > 0 { try stream.seek(to: offset) }
        stream.open()
        defer { stream.close() }
        let (data, last) = stream.readToEnd(chunkSize: chunk)
        return (data, last, source.error as? BlobStreamError)
    }

    @Test("a whole read equals the file (sha256), in many GETs; length and offsets known")
    func wholeRead() throws {
        let bytes = sampleBytes(700_001, seed: 31)
        let url = try server.serve(Array(bytes), as: "whole.bin")
        let s = source(url)
        let (data, last, error) = try read(s)
        #expect(error == nil, "\(String(describing: error))")
        #expect(last == 0)
        #expect(sha256(data) == sha256(bytes))
        #expect(s.length == 700_001)
        #expect(s.offsetCapability == .seek)
    }

    @Test(
        "reads from many offsets give the file's bytes from there (block edges, the last byte, the end)",
        arguments: [0, 1, 65_535, 65_536, 65_537, 131_072, 300_000, 399_999, 400_000] as [Int64])
    func offsets(offset: Int64) throws {
        let bytes = sampleBytes(400_000, seed: 32)
        let url = try server.serve(Array(bytes), as: "offsets.bin")
        let (data, last, error) = try read(source(url), from: offset, chunk: 7_777)
        #expect(error == nil, "\(String(describing: error))")
        #expect(last == 0)
        #expect(data == bytes.subdata(in: Int(offset)..<bytes.count))
    }

    @Test("moves after open: backwards, forwards, into the block read ahead")
    func seeksAfterOpen() throws {
        let bytes = sampleBytes(300_000, seed: 33)
        let url = try server.serve(Array(bytes), as: "seeks.bin")
        let stream = BlobInputStream(dataSource: source(url))
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 5_000)
        for offset in [250_000, 10, 70_000, 65_536, 299_999, 0] {
            try stream.seek(to: Int64(offset))
            let n = stream.read(&buffer, maxLength: buffer.count)
            #expect(n > 0, "offset \(offset): read \(n)")
            #expect(Data(buffer[0..<max(n, 0)]) == bytes.subdata(in: offset..<offset + max(n, 0)))
        }
    }

    @Test("an empty file opens at its end, with length 0")
    func emptyFile() throws {
        let url = try server.serve([], as: "empty.bin")
        let s = source(url)
        let (data, last, error) = try read(s)
        #expect(error == nil, "\(String(describing: error))")
        #expect(last == 0 && data.isEmpty)
        #expect(s.length == 0)
    }

    @Test("gzip:http:// and archive:http://…!/member give what the local files give")
    func compositions() throws {
        let registry = DataSourceRegistry()
        FileSources.register(in: registry)
        GzipSources.register(in: registry)
        ArchiveSources.register(in: registry)
        HTTPSources.register(in: registry, options: options)
        for name in ["sample.txt.gz", "photos.tar", "photos.tar.gz"] {
            try server.serve(Array(try Data(contentsOf: fixtures.appendingPathComponent(name))), as: name)
        }
        let local = "file://" + fixtures.path
        let remote = server.baseURL + "/files"
        let cases = [
            ("gzip:", "/sample.txt.gz", ""),
            ("archive:", "/photos.tar", "!/DCIM/100TEST/IMG_0001.JPG"),
            ("archive:", "/photos.tar", "!/notes/sample.txt"),
            ("archive:gzip:", "/photos.tar.gz", "!/DCIM/100TEST/IMG_0002.JPG"),
        ]
        for (prefix, path, member) in cases {
            let expected = try read(try registry.makeSource(url: prefix + local + path + member))
            let got = try read(try registry.makeSource(url: prefix + remote + path + member))
            #expect(expected.error == nil && !expected.data.isEmpty)
            #expect(got.error == nil, "\(prefix)\(path)\(member): \(String(describing: got.error))")
            #expect(got.last == 0)
            #expect(sha256(got.data) == sha256(expected.data), "\(prefix)\(path)\(member)")
        }
    }

    @Test("SourceConformance: the contract's checks pass, a dropped connection included")
    func conformance() throws {
        let bytes = sampleBytes(150_000, seed: 41)
        let url = try server.serve(Array(bytes), as: "conformance.bin")
        let peer = try SocketPeer.droppingServer(length: 150_000)
        defer { peer.stop() }
        let options = self.options
        let findings = SourceConformance.check(
            expected: bytes, timeout: 30,
            failing: { HTTPRangeDataSource(url: URL(string: peer.baseURL + "/dropped.bin")!, options: options) },
            makeSource: { HTTPRangeDataSource(url: URL(string: url)!, options: options) })
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("a 404 is an error naming the URL and the status")
    func notFound() throws {
        let url = server.baseURL + "/files/missing.bin"
        let (data, last, error) = try read(source(url))
        #expect(data.isEmpty && last == -1)
        #expect(error?.code == .notFound)
        #expect(error?.message.contains(url) == true)
        #expect(error?.message.contains("404") == true)
    }

    @Test("a file replaced while read: .changed, never spliced bytes or a clean end")
    func changedObject() throws {
        let first = sampleBytes(600_000, seed: 34)
        let url = try server.serve(Array(first), as: "changing.bin")
        let stream = BlobInputStream(dataSource: source(url))
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var got = Data()
        let n = stream.read(&buffer, maxLength: buffer.count)
        #expect(n > 0)
        got.append(contentsOf: buffer[0..<max(n, 0)])
        // A new version with another size (nginx's ETag is its mtime and size).
        try server.serve(Array(sampleBytes(600_100, seed: 35)), as: "changing.bin")
        var last = 0
        repeat {
            last = stream.read(&buffer, maxLength: buffer.count)
            if last > 0 { got.append(contentsOf: buffer[0..<last]) }
        } while last > 0
        #expect(last == -1)
        let error = stream.dataSource.error as? BlobStreamError
        #expect(error?.code == .changed, "\(String(describing: error))")
        #expect(error?.message.contains(url) == true)
        #expect(got == first.prefix(got.count), "every byte delivered is from the first version")
    }

    @Test("a server that ignores Range: a small file is read whole; a large one is a clear error")
    func rangeIgnored() throws {
        let small = sampleBytes(40_000, seed: 36)
        try server.serve(Array(small), as: "small.bin")
        try server.serve(Array(sampleBytes(300_000, seed: 37)), as: "large.bin")
        let whole = try read(source(server.baseURL + "/norange/small.bin"))
        #expect(whole.error == nil && whole.last == 0)
        #expect(whole.data == small)
        let tail = try read(source(server.baseURL + "/norange/small.bin"), from: 1_000)
        #expect(tail.data == small.suffix(from: 1_000))
        let large = try read(source(server.baseURL + "/norange/large.bin"))
        #expect(large.last == -1)
        #expect(large.error?.code == .unsupported)
        #expect(large.error?.message.contains("ignored the Range") == true)
    }

    @Test("a connection dropped mid-body: .truncated naming the URL and the offset, never a short clean end")
    func droppedConnection() throws {
        let peer = try SocketPeer.droppingServer(length: 200_000)
        defer { peer.stop() }
        let url = peer.baseURL + "/object.bin"
        let (data, last, error) = try read(source(url))
        #expect(last == -1)
        #expect(data.count < 200_000)
        #expect(error?.code == .truncated, "\(String(describing: error))")
        #expect(error?.message.contains(url) == true)
        #expect(error?.message.contains("offset") == true)
    }

    @Test("a server that never answers: the idle timeout ends the open; close() ends a waiting read")
    func stalledServer() throws {
        let peer = try StallingPeer()
        defer { peer.stop() }
        var quick = options
        quick.connection.idleTimeout = .milliseconds(500)
        let started = Date()
        let (_, last, error) = try read(source(peer.baseURL + "/x", quick))
        #expect(last == -1)
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(Date().timeIntervalSince(started) < 10)
        let stream = BlobInputStream(dataSource: source(peer.baseURL + "/y"))
        let closed = stream.closeWhileReading(opening: true)
        #expect(closed.blocked)
        #expect(closed.result == -1)
    }

    @Test("a read on an event loop of the client fails at once with .wouldDeadlock; so does a synchronous open there")
    func eventLoopRead() throws {
        let peer = try StallingPeer() // the answer never comes: a read would have to wait
        defer { peer.stop() }
        let source = Handoff(value: source(peer.baseURL + "/z"))
        source.value.open()
        defer { source.value.close() }
        let loop = HTTPClient.shared.eventLoopGroup.next() // the group every source's own client runs on
        let started = Date()
        let read = try loop.submit { () -> Int in
            var byte: UInt8 = 0
            return source.value.read(&byte, maxLength: 1)
        }.wait()
        #expect(read == -1)
        #expect((source.value.error as? BlobStreamError)?.code == .wouldDeadlock)
        #expect(Date().timeIntervalSince(started) < 5)
        let stream = Handoff(value: BlobInputStream(dataSource: self.source(peer.baseURL + "/w")))
        let code = try loop.submit { () -> BlobStreamError.Code? in
            stream.value.open()
            return (stream.value.streamError as? BlobStreamError)?.code
        }.wait()
        stream.value.close()
        #expect(code == .wouldDeadlock)
    }

    @Test("HTTPS: untrusted without the CA (a clear error), trusted with it (bytes equal)")
    func tls() throws {
        let bytes = sampleBytes(200_000, seed: 38)
        try server.serve(Array(bytes), as: "tls.bin")
        let url = server.tlsBaseURL + "/files/tls.bin"
        let untrusted = try read(source(url))
        #expect(untrusted.last == -1)
        #expect(untrusted.error?.code == .ioFailed, "\(String(describing: untrusted.error))")
        #expect(untrusted.error?.message.contains("TLS") == true)
        #expect(untrusted.error?.message.contains("HTTPConnectionOptions.caBundle or AWS_CA_BUNDLE") == true)
        var trusting = options
        trusting.connection.caBundle = server.certificates.caCertificate.path
        let trusted = try read(source(url, trusting))
        #expect(trusted.error == nil, "\(String(describing: trusted.error))")
        #expect(trusted.data == bytes)
        var missing = options
        missing.connection.caBundle = server.folder.path + "/no-such-ca.pem"
        let noBundle = try read(source(url, missing))
        #expect(noBundle.error?.message.contains("no-such-ca.pem") == true)
        // Bad bundles: none is trusted, each fails the read (checked when the client is
        // made, or parsed at the first TLS connection), naming the file or TLS.
        let bad: [(name: String, contents: String, names: String)] = [
            ("empty.pem", "", "empty.pem"),
            ("text.pem", "not a certificate\n", "text.pem"),
            ("damaged.pem", "-----BEGIN CERTIFICATE-----\nMIIBroken==\n-----END CERTIFICATE-----\n", "TLS"),
        ]
        for bundle in bad {
            let path = server.folder.path + "/" + bundle.name
            try Data(bundle.contents.utf8).write(to: URL(fileURLWithPath: path))
            var options = options
            options.connection.caBundle = path
            let result = try read(source(url, options))
            #expect(result.last == -1, "\(bundle.name)")
            #expect(result.data.isEmpty, "\(bundle.name)")
            #expect(
                result.error?.message.contains(bundle.names) == true,
                "\(bundle.name): \(String(describing: result.error))")
        }
    }

    @Test("a CA bundle is checked when the client is made and parsed only for TLS: http:// needs none of it")
    func caBundleChecked() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = URL(string: "http://127.0.0.1:9/x")!
        let missing = HTTPConnectionOptions(caBundle: folder.path + "/none.pem")
        let notFound = #expect(throws: BlobStreamError.self) { try missing.clientConfiguration(for: url) }
        #expect(notFound?.code == .notFound)
        #expect(notFound?.message.contains("none.pem") == true)
        let text = folder.appendingPathComponent("text.pem")
        try Data("hello\n".utf8).write(to: text)
        let corrupt = #expect(throws: BlobStreamError.self) {
            try HTTPConnectionOptions(caBundle: text.path).clientConfiguration(for: url)
        }
        #expect(corrupt?.code == .corrupt)
        #expect(corrupt?.message.contains("text.pem") == true)
        let pem = folder.appendingPathComponent("ca.pem")
        try Data("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8).write(to: pem)
        let configuration = try HTTPConnectionOptions(caBundle: pem.path).clientConfiguration(for: url)
        #expect(configuration.tlsConfiguration?.additionalTrustRoots == [.file(pem.path)])
    }

    @Test("HTTPS_PROXY: the reads go through the proxy's CONNECT tunnel; NO_PROXY bypasses it")
    func proxy() throws {
        let bytes = sampleBytes(150_000, seed: 39)
        try server.serve(Array(bytes), as: "proxied.bin")
        let proxy = try SocketPeer.connectProxy()
        defer { proxy.stop() }
        let environment = [
            "HTTPS_PROXY": "http://127.0.0.1:\(proxy.port)", "AWS_CA_BUNDLE": server.certificates.caCertificate.path,
        ]
        let url = server.tlsBaseURL + "/files/proxied.bin"
        // NO_PROXY first, while no client has used the proxy: a client that went through it
        // may still open a spare connection after its read (AsyncHTTPClient starts one per
        // queued request), which a count taken between the two reads would catch.
        var bypass = options
        bypass.connection = HTTPConnectionOptions.fromEnvironment(
            environment: environment.merging(["NO_PROXY": "localhost,127.0.0.1"]) { $1 })
        let direct = try read(source(url, bypass))
        #expect(direct.data == bytes)
        #expect(proxy.recorded("connects").isEmpty, "\(proxy.recorded("connects"))")
        var through = options
        through.connection = HTTPConnectionOptions.fromEnvironment(environment: environment)
        let got = try read(source(url, through))
        #expect(got.error == nil, "\(String(describing: got.error))")
        #expect(got.data == bytes)
        #expect(proxy.recorded("connects").contains { $0.hasPrefix("CONNECT 127.0.0.1:\(server.tlsPort) ") })
    }

    @Test("the prepare hook sees every request with its Range set, and may add headers")
    func prepareHook() throws {
        let bytes = sampleBytes(200_000, seed: 40)
        let url = try server.serve(Array(bytes), as: "hook.bin")
        let seen = ConcurrentLog<String>()
        var hooked = options
        hooked.hedging = nil // the requests are counted: a hedge on a slow run is one more
        hooked.prepare = { request in
            seen.add(request.headers.first(name: "Range") ?? "none")
            let last = request.isToEnd ? "" : String(request.range.upperBound)
            #expect(request.headers.first(name: "Range") == "bytes=\(request.range.lowerBound)-\(last)")
            request.headers.add(name: "X-Signed", value: "yes")
        }
        let (data, _, error) = try read(source(url, hooked))
        #expect(error == nil)
        #expect(data == bytes)
        // 200,000 bytes in blocks of 64 KiB: the first GET to the end (its first block taken),
        // then 3 GETs of a block.
        #expect(seen.all == ["bytes=0-", "bytes=65536-131071", "bytes=131072-196607", "bytes=196608-199999"])
        var failing = options
        failing.prepare = { _ in throw TestFailure("no credentials") }
        let refused = try read(source(url, failing))
        #expect(refused.error?.code == .sourceFailed)
        #expect(refused.error?.message.contains(url) == true)
    }

    @Test("downloadBlockSize: a download asks for larger GETs; a read that jumps keeps blockSize")
    func downloadBlocks() throws {
        let bytes = sampleBytes(600_000, seed: 41)
        let url = try server.serve(Array(bytes), as: "download.bin")
        var large = options
        large.downloadBlockSize = 128 << 10
        let ranges = ConcurrentLog<String>()
        let whole = try read(source(url, loggingRanges(large, into: ranges)))
        #expect(whole.error == nil)
        #expect(sha256(whole.data) == sha256(bytes))
        // The first GET to the end (its first block of 64 KiB taken), then 128 KiB a GET.
        #expect(
            ranges.all == [
                "bytes=0-", "bytes=65536-196607", "bytes=196608-327679", "bytes=327680-458751",
                "bytes=458752-589823", "bytes=589824-599999",
            ], "\(ranges.all)")
        // A read that jumps (after 10,000 bytes, to 400,000): from there, blocks ramp up from
        // 8 KiB to 64 KiB, never 128 KiB.
        let jumping = ConcurrentLog<String>()
        let stream = BlobInputStream(dataSource: source(url, loggingRanges(large, into: jumping)))
        stream.open()
        defer { stream.close() }
        var head = [UInt8](repeating: 0, count: 10_000)
        #expect(stream.read(&head, maxLength: head.count) == head.count)
        try stream.seek(to: 400_000)
        let (rest, last) = stream.readToEnd(chunkSize: 10_000)
        #expect(last == 0)
        #expect(sha256(Data(head)) == sha256(bytes[..<10_000]) && sha256(rest) == sha256(bytes[400_000...]))
        let sizes = jumping.all.compactMap { range -> Int? in
            let bounds = range.dropFirst("bytes=".count).split(separator: "-").compactMap { Int($0) }
            return bounds.count == 2 && bounds[0] >= 400_000 ? bounds[1] - bounds[0] + 1 : nil
        }
        #expect(!sizes.isEmpty && sizes.allSatisfy { $0 <= 64 << 10 }, "\(jumping.all)")
    }

    /// `options` with a hook that logs the `Range` header of every request into `log`.
    func loggingRanges(_ options: HTTPRangeOptions, into log: ConcurrentLog<String>) -> HTTPRangeOptions {
        var logging = options
        logging.prepare = { request in log.add(request.headers.first(name: "Range") ?? "none") }
        return logging
    }
}
