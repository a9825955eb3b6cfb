import Foundation
import Glibc
import NginxTestServer
import Testing

/// `blobstream` reading http:// and https:// sources from nginx on 127.0.0.1.
@Suite("The blobstream tool: remote sources over http(s)", .serialized)
final class ToolRemoteTests {
    let server: StaticFileServer
    var archives: URL { Tool.fixtures.appendingPathComponent("archives") }
    var blobstream: String { Tool.binDirectory.appendingPathComponent("blobstream").path }
    /// No proxy and no CA bundle from the environment of the test run.
    let plain = [
        "HTTPS_PROXY": "", "https_proxy": "", "HTTP_PROXY": "", "http_proxy": "", "AWS_CA_BUNDLE": "",
        "SSL_CERT_FILE": "",
    ]

    init() throws {
        server = try StaticFileServer()
        for name in ["sample.txt.gz", "photos.tar"] {
            try server.serve(Array(try Data(contentsOf: archives.appendingPathComponent(name))), as: name)
        }
    }
    deinit { server.stop() }

    @Test("checksum http://, cat gzip:http:// with an offset, cat archive:http://…!/member")
    func remoteSources() async throws {
        let base = server.baseURL + "/files"
        let tar = try Data(contentsOf: archives.appendingPathComponent("photos.tar"))
        let sum = try await Tool.run(blobstream, ["checksum", base + "/photos.tar"], environment: plain)
        #expect(sum.status == 0, "\(sum.stderr)")
        #expect(sum.text == "\(Tool.sha256(tar))  \(base)/photos.tar\n")
        let text = try await Tool.run("/usr/bin/gzip", ["-dc", archives.appendingPathComponent("sample.txt.gz").path])
        let gzip = try await Tool.run(
            blobstream, ["cat", "--offset", "1000", "gzip:" + base + "/sample.txt.gz"], environment: plain)
        #expect(gzip.status == 0, "\(gzip.stderr)")
        #expect(gzip.stdout == text.stdout.suffix(from: 1000))
        let member = "DCIM/100TEST/IMG_0001.JPG"
        let reference = try await Tool.run(
            "/usr/bin/tar", ["-xOf", archives.appendingPathComponent("photos.tar").path, member])
        let remote = try await Tool.run(
            blobstream, ["cat", "archive:" + base + "/photos.tar!/" + member], environment: plain)
        #expect(remote.status == 0, "\(remote.stderr)")
        #expect(Tool.sha256(remote.stdout) == Tool.sha256(reference.stdout))
    }

    @Test(
        "where cat overlaps with curl, the same bytes: a whole file, a range (--offset/--length as curl -r), a missing file fails both"
    )
    func sameAsCurl() async throws {
        let url = server.baseURL + "/files/photos.tar"
        let whole = try await Tool.run(blobstream, ["cat", url], environment: plain)
        let curlWhole = try await Tool.run("/usr/bin/curl", ["-sSf", "--noproxy", "*", url])
        #expect(whole.status == 0 && curlWhole.status == 0, "\(whole.stderr) \(curlWhole.stderr)")
        #expect(!whole.stdout.isEmpty && whole.stdout == curlWhole.stdout)
        let range = try await Tool.run(
            blobstream, ["cat", "--offset", "1000", "--length", "5000", url], environment: plain)
        let curlRange = try await Tool.run("/usr/bin/curl", ["-sSf", "--noproxy", "*", "-r", "1000-5999", url])
        #expect(range.status == 0 && curlRange.status == 0, "\(range.stderr) \(curlRange.stderr)")
        #expect(range.stdout.count == 5000 && range.stdout == curlRange.stdout)
        let missing = server.baseURL + "/files/nope.bin"
        let ours = try await Tool.run(blobstream, ["cat", missing], environment: plain)
        let curlMissing = try await Tool.run("/usr/bin/curl", ["-sSf", "--noproxy", "*", missing])
        #expect(ours.status == 1 && curlMissing.status != 0)
        #expect(ours.stdout.isEmpty && curlMissing.stdout.isEmpty)
    }

    @Test("a remote zip's backslash name: ls prints it as stored, and cat of it reads the member")
    func remoteZipName() async throws {
        let dir = try ZipBackslashNameTests.makeZip()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try server.serve(
            Array(try Data(contentsOf: dir.appendingPathComponent("A.zip"))), as: "names/A.zip")
        let listed = try await Tool.run(blobstream, ["ls", url], environment: plain)
        #expect(listed.status == 0, "\(listed.stderr)")
        let names = listed.text.split(separator: "\n").dropFirst()
            .map { String($0.split(separator: "\t", omittingEmptySubsequences: false)[0]) }
        #expect(names == ZipBackslashNameTests.members.map(\.name))
        for (name, member) in zip(names, ZipBackslashNameTests.members) {
            let r = try await Tool.run(blobstream, ["cat", "archive:\(url)!/\(name)"], environment: plain)
            #expect(r.status == 0 && Tool.sha256(r.stdout) == Tool.sha256(member.content), "\(name): \(r.stderr)")
        }
    }

    @Test("a missing remote file: status 1, one line naming the URL and the status")
    func missing() async throws {
        let url = server.baseURL + "/files/nope.bin"
        let result = try await Tool.run(blobstream, ["cat", url], environment: plain)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains(url))
        #expect(result.stderr.contains("404"))
    }

    @Test("https:// with the test's CA: refused without it, read with --ca-bundle or AWS_CA_BUNDLE")
    func https() async throws {
        let url = server.tlsBaseURL + "/files/photos.tar"
        let tar = try Data(contentsOf: archives.appendingPathComponent("photos.tar"))
        let ca = server.certificates.caCertificate.path
        let refused = try await Tool.run(blobstream, ["cat", url], environment: plain)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("TLS"), "\(refused.stderr)")
        let flag = try await Tool.run(blobstream, ["cat", "--ca-bundle", ca, url], environment: plain)
        #expect(flag.status == 0, "\(flag.stderr)")
        #expect(flag.stdout == tar)
        let variable = try await Tool.run(
            blobstream, ["checksum", url], environment: plain.merging(["AWS_CA_BUNDLE": ca]) { $1 })
        #expect(variable.status == 0, "\(variable.stderr)")
        #expect(variable.text.hasPrefix(Tool.sha256(tar)))
    }

    @Test("upload to https:// with the test's CA: refused without it, stored whole with --ca-bundle")
    func httpsUpload() async throws {
        let source = archives.appendingPathComponent("photos.tar").path
        let target = server.tlsBaseURL + "/files/uploaded/photos.tar"
        let refused = try await Tool.run(blobstream, ["upload", source, "--to", target], environment: plain)
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains(target) && refused.stderr.contains("CERTIFICATE_VERIFY_FAILED"), "\(refused.stderr)"
        )
        #expect(FileManager.default.contents(atPath: server.root.path + "/uploaded/photos.tar") == nil)
        let ca = server.certificates.caCertificate.path
        let sent = try await Tool.run(
            blobstream, ["upload", source, "--to", target, "--ca-bundle", ca], environment: plain)
        #expect(sent.status == 0, "\(sent.stderr)")
        let stored = FileManager.default.contents(atPath: server.root.path + "/uploaded/photos.tar")
        #expect(stored == (try Data(contentsOf: URL(fileURLWithPath: source))))
    }

    /// A file that changes after the first request, from a server without a strong ETag:
    /// `cat` and `checksum` give version A exactly, from one GET; `cat --offset` too; a zip
    /// member (which needs the central directory at the end, then a move back) is version
    /// A's member or a failure naming the URL and the missing validator, never a mix.
    @Test(
        "a remote file that changes, served without a strong ETag: version A from one GET, or an error naming the validator",
        arguments: [SocketPeer.Validator.weakETag, .lastModifiedOnly, .none])
    func unvalidatedChange(validator: SocketPeer.Validator) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("changing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Blocks of 64 KiB of a pattern, each block's first bytes its number and `seed`.
        let pattern = Data((0..<65_536).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) })
        func bytes(_ count: Int, _ seed: UInt8) -> Data {
            var data = Data(capacity: count)
            for block in 0..<count / 65_536 {
                data.append(contentsOf: [UInt8(truncatingIfNeeded: block), UInt8(truncatingIfNeeded: block >> 8), seed])
                data.append(pattern.dropFirst(3))
            }
            return data
        }
        func peer(_ a: Data, _ b: Data) throws -> SocketPeer {
            let (fileA, fileB) = (folder.appendingPathComponent("a"), folder.appendingPathComponent("b"))
            try a.write(to: fileA)
            try b.write(to: fileB)
            return try SocketPeer.changingServer(versionA: fileA, versionB: fileB, validator: validator)
        }
        // 9 MiB: more than two of the tool's 4 MiB blocks.
        let (a, b) = (bytes(9 << 20, 1), bytes(9 << 20, 2))
        for arguments in [["cat"], ["cat", "--offset", "5000000"]] {
            let server = try peer(a, b)
            defer { server.stop() }
            let url = server.baseURL + "/big.bin"
            let result = try await Tool.run(blobstream, arguments + [url], environment: plain)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            let expected = arguments.count == 1 ? a : a.suffix(from: 5_000_000)
            // One GET's bytes. On a slow machine the first GET may be hedged (asked again
            // after `HTTPHedging.firstDelay` with no answer): the same request, whose answer,
            // if it comes first, is version B whole; never a second range, never a mix.
            let requests = server.recorded("requests")
            let hedged = requests.count > 1
            let other = arguments.count == 1 ? b : b.suffix(from: 5_000_000)
            #expect(
                Tool.sha256(result.stdout) == Tool.sha256(expected)
                    || (hedged && Tool.sha256(result.stdout) == Tool.sha256(other)), "\(arguments)")
            // The first GET and at most 4 hedges of it (`HTTPHedging.maxHedges`).
            #expect(
                !requests.isEmpty && requests.count <= 5 && requests.allSatisfy { $0 == requests[0] }, "\(requests)")
        }
        let server = try peer(a, b)
        defer { server.stop() }
        let url = server.baseURL + "/big.bin"
        let sum = try await Tool.run(blobstream, ["checksum", url], environment: plain)
        #expect(sum.status == 0, "\(sum.stderr)")
        #expect(sum.text == "\(Tool.sha256(a))  \(url)\n")
        // A zip member: from the local headers, in one pass (a zip's central directory, at the
        // end, would need a move back).
        let zipA = folder.appendingPathComponent("a.zip")
        let zipB = folder.appendingPathComponent("b.zip")
        let (memberA, memberB) = (bytes(6 << 20, 3), bytes(6 << 20, 4))
        for (zip, member) in [(zipA, memberA), (zipB, memberB)] {
            let input = folder.appendingPathComponent("member.bin")
            try member.write(to: input)
            let made = try await Tool.run(
                "/usr/bin/python3",
                [
                    "-c",
                    "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w') as z: z.write(sys.argv[2], 'member.bin')",
                    zip.path, input.path,
                ])
            #expect(made.status == 0, "\(made.stderr)")
        }
        let zips = try peer(try Data(contentsOf: zipA), try Data(contentsOf: zipB))
        defer { zips.stop() }
        let zipURL = zips.baseURL + "/photos.zip"
        let member = try await Tool.run(blobstream, ["cat", "archive:" + zipURL + "!/member.bin"], environment: plain)
        if member.status == 0 {
            #expect(Tool.sha256(member.stdout) == Tool.sha256(memberA), "the member as in version A")
        } else {
            #expect(member.status == 1)
            #expect(member.stderr.contains(zipURL) && member.stderr.contains("no strong ETag"), "\(member.stderr)")
        }
        #expect(zips.recorded("requests").count == 1, "\(zips.recorded("requests"))")
    }

    /// The one GET of a file without a strong ETag streams: `checksum` of 64 MiB from it
    /// peaks within 32 MiB of the memory `checksum` of a tiny file takes (the whole file
    /// held would be 64 MiB more), from one request.
    @Test("a file without a strong ETag streams from its one GET: memory bounded, not the file's size")
    func unvalidatedStreamsBounded() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("streamed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var big = Data(capacity: 64 << 20)
        let pattern = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) })
        for block in 0..<64 {
            big.append(UInt8(block))
            big.append(pattern.dropFirst())
        }
        let (fileA, fileB, tiny) = (
            folder.appendingPathComponent("a"), folder.appendingPathComponent("b"),
            folder.appendingPathComponent("tiny")
        )
        try big.write(to: fileA)
        try Data("another version".utf8).write(to: fileB)
        try Data("tiny".utf8).write(to: tiny)
        let server = try SocketPeer.changingServer(versionA: fileA, versionB: fileB, validator: .weakETag)
        defer { server.stop() }
        /// The checksum line and the peak resident size (KiB) of `blobstream checksum URL`.
        func checksum(_ url: String) async throws -> (line: String, peak: Int) {
            let result = try await Tool.run(
                "/usr/bin/time", ["-f", "peak %M", blobstream, "checksum", url], environment: plain)
            #expect(result.status == 0, "\(result.stderr)")
            let peak = result.stderr.split(separator: "\n").last { $0.hasPrefix("peak ") }.flatMap {
                Int($0.dropFirst(5))
            }
            return (result.text, peak ?? .max)
        }
        let small = try await checksum(tiny.path)
        let url = server.baseURL + "/big.bin"
        let streamed = try await checksum(url)
        #expect(streamed.line == "\(Tool.sha256(big))  \(url)\n")
        #expect(streamed.peak < small.peak + 32 * 1024, "peak \(streamed.peak) KiB against \(small.peak) KiB")
        #expect(server.recorded("requests") == ["bytes=0-|-|-"])
    }

    @Test("a FIFO at the index cache entry's name: the read passes it by (no wait for a writer), with the right bytes")
    func fifoInIndexCache() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-cache-fifo-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = server.baseURL + "/files/sample.txt.gz"
        // The environment: the cache folder, and no proxy.
        let environment =
            ["/usr/bin/env", "BLOBSTREAM_INDEX_CACHE=\(folder.path)"] + plain.keys.sorted().map { "\($0)=" }
        let indexed = await BoundedRun.run(blobstream, ["index", "--index-cache", url], prefix: environment)
        try #require(indexed.status == 0, "\(indexed.stderrText)")
        let entry = String(String(decoding: indexed.stdout, as: UTF8.self).prefix { $0 != "\t" })
        try #require(entry.hasPrefix(folder.path + "/") && FileManager.default.fileExists(atPath: entry), "\(entry)")
        // The entry replaced by a FIFO nobody writes to.
        try FileManager.default.removeItem(atPath: entry)
        try #require(mkfifo(entry, 0o600) == 0, "mkfifo: errno \(errno)")
        let text = try await Tool.run("/usr/bin/gzip", ["-dc", archives.appendingPathComponent("sample.txt.gz").path])
        let read = await BoundedRun.run(blobstream, ["cat", "gzip:" + url], limit: 20, prefix: environment)
        #expect(!read.timedOut, "the read waited on the FIFO")
        #expect(read.status == 0, "\(read.stderrText)")
        #expect(Tool.sha256(read.stdout) == Tool.sha256(text.stdout))
    }
}
