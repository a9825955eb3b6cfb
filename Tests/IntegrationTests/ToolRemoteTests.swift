import Foundation
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
    func remoteSources() throws {
        let base = server.baseURL + "/files"
        let tar = try Data(contentsOf: archives.appendingPathComponent("photos.tar"))
        let sum = try Tool.run(blobstream, ["checksum", base + "/photos.tar"], environment: plain)
        #expect(sum.status == 0, "\(sum.stderr)")
        #expect(sum.text == "\(Tool.sha256(tar))  \(base)/photos.tar\n")
        let text = try Tool.run("/usr/bin/gzip", ["-dc", archives.appendingPathComponent("sample.txt.gz").path])
        let gzip = try Tool.run(
            blobstream, ["cat", "--offset", "1000", "gzip:" + base + "/sample.txt.gz"], environment: plain)
        #expect(gzip.status == 0, "\(gzip.stderr)")
        #expect(gzip.stdout == text.stdout.suffix(from: 1000))
        let member = "DCIM/100TEST/IMG_0001.JPG"
        let reference = try Tool.run(
            "/usr/bin/tar", ["-xOf", archives.appendingPathComponent("photos.tar").path, member])
        let remote = try Tool.run(
            blobstream, ["cat", "archive:" + base + "/photos.tar!/" + member], environment: plain)
        #expect(remote.status == 0, "\(remote.stderr)")
        #expect(Tool.sha256(remote.stdout) == Tool.sha256(reference.stdout))
    }

    @Test(
        "where cat overlaps with curl, the same bytes: a whole file, a range (--offset/--length as curl -r), a missing file fails both"
    )
    func sameAsCurl() throws {
        let url = server.baseURL + "/files/photos.tar"
        let whole = try Tool.run(blobstream, ["cat", url], environment: plain)
        let curlWhole = try Tool.run("/usr/bin/curl", ["-sSf", "--noproxy", "*", url])
        #expect(whole.status == 0 && curlWhole.status == 0, "\(whole.stderr) \(curlWhole.stderr)")
        #expect(!whole.stdout.isEmpty && whole.stdout == curlWhole.stdout)
        let range = try Tool.run(
            blobstream, ["cat", "--offset", "1000", "--length", "5000", url], environment: plain)
        let curlRange = try Tool.run("/usr/bin/curl", ["-sSf", "--noproxy", "*", "-r", "1000-5999", url])
        #expect(range.status == 0 && curlRange.status == 0, "\(range.stderr) \(curlRange.stderr)")
        #expect(range.stdout.count == 5000 && range.stdout == curlRange.stdout)
        let missing = server.baseURL + "/files/nope.bin"
        let ours = try Tool.run(blobstream, ["cat", missing], environment: plain)
        let curlMissing = try Tool.run("/usr/bin/curl", ["-sSf", "--noproxy", "*", missing])
        #expect(ours.status == 1 && curlMissing.status != 0)
        #expect(ours.stdout.isEmpty && curlMissing.stdout.isEmpty)
    }

    @Test("a remote zip's backslash name: ls prints it as stored, and cat of it reads the member")
    func remoteZipName() throws {
        let dir = try ZipBackslashNameTests.makeZip()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = try server.serve(
            Array(try Data(contentsOf: dir.appendingPathComponent("A.zip"))), as: "names/A.zip")
        let listed = try Tool.run(blobstream, ["ls", url], environment: plain)
        #expect(listed.status == 0, "\(listed.stderr)")
        let names = listed.text.split(separator: "\n").dropFirst()
            .map { String($0.split(separator: "\t", omittingEmptySubsequences: false)[0]) }
        #expect(names == ZipBackslashNameTests.members.map(\.name))
        for (name, member) in zip(names, ZipBackslashNameTests.members) {
            let r = try Tool.run(blobstream, ["cat", "archive:\(url)!/\(name)"], environment: plain)
            #expect(r.status == 0 && Tool.sha256(r.stdout) == Tool.sha256(member.content), "\(name): \(r.stderr)")
        }
    }

    @Test("a missing remote file: status 1, one line naming the URL and the status")
    func missing() throws {
        let url = server.baseURL + "/files/nope.bin"
        let result = try Tool.run(blobstream, ["cat", url], environment: plain)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains(url))
        #expect(result.stderr.contains("404"))
    }

    @Test("https:// with the test's CA: refused without it, read with --ca-bundle or AWS_CA_BUNDLE")
    func https() throws {
        let url = server.tlsBaseURL + "/files/photos.tar"
        let tar = try Data(contentsOf: archives.appendingPathComponent("photos.tar"))
        let ca = server.certificates.caCertificate.path
        let refused = try Tool.run(blobstream, ["cat", url], environment: plain)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("TLS"), "\(refused.stderr)")
        let flag = try Tool.run(blobstream, ["cat", "--ca-bundle", ca, url], environment: plain)
        #expect(flag.status == 0, "\(flag.stderr)")
        #expect(flag.stdout == tar)
        let variable = try Tool.run(
            blobstream, ["checksum", url], environment: plain.merging(["AWS_CA_BUNDLE": ca]) { $1 })
        #expect(variable.status == 0, "\(variable.stderr)")
        #expect(variable.text.hasPrefix(Tool.sha256(tar)))
    }

    @Test("upload to https:// with the test's CA: refused without it, stored whole with --ca-bundle")
    func httpsUpload() throws {
        let source = archives.appendingPathComponent("photos.tar").path
        let target = server.tlsBaseURL + "/files/uploaded/photos.tar"
        let refused = try Tool.run(blobstream, ["upload", source, "--to", target], environment: plain)
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains(target) && refused.stderr.contains("CERTIFICATE_VERIFY_FAILED"), "\(refused.stderr)"
        )
        #expect(FileManager.default.contents(atPath: server.root.path + "/uploaded/photos.tar") == nil)
        let ca = server.certificates.caCertificate.path
        let sent = try Tool.run(blobstream, ["upload", source, "--to", target, "--ca-bundle", ca], environment: plain)
        #expect(sent.status == 0, "\(sent.stderr)")
        let stored = FileManager.default.contents(atPath: server.root.path + "/uploaded/photos.tar")
        #expect(stored == (try Data(contentsOf: URL(fileURLWithPath: source))))
    }
}
