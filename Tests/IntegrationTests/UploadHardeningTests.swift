import Foundation
import NginxTestServer
import Testing

/// `blobstream upload` against bad URLs, redirects, early answers and stalled peers: the
/// exit status, one stderr line naming what was wrong, nothing on stdout.
@Suite("The blobstream tool: upload URLs, redirects, early answers, time limits")
struct UploadHardeningTests {
    static let sample = Tool.fixtures.appendingPathComponent("files/sample.txt").path

    /// Bad `--to` URLs and what the one stderr line must say about each.
    static let badURLs: [(url: String, reason: String)] = [
        ("http://127.0.0.1:99999/x", "the port 99999 is out of range"),
        ("http://127.0.0.1:0/x", "the port 0 is out of range"),
        ("http://127.0.0.1:65536/x", "the port 65536 is out of range"),
        ("http://127.0.0.1:123456789012345678901234567890/x", "is out of range"),
        ("http://127.0.0.1:-1/x", "the port '-1' is not a number"),
        ("http://127.0.0.1:http/x", "the port 'http' is not a number"),
        ("http://127.0.0.1:/x", "the port is empty"),
        ("http:///x", "it has no host"),
        ("http://:8080/x", "it has no host"),
        ("http://user@/x", "it has no host"),
        ("http:/127.0.0.1/x", "it has no host"),
        ("ftp://127.0.0.1/x", "the scheme 'ftp' is not http or https"),
        ("file:///etc/hostname", "the scheme 'file' is not http or https"),
        ("mailto:someone@example.com", "the scheme 'mailto' is not http or https"),
        ("127.0.0.1:8080/x", "it has no scheme"),
        ("/tmp/x", "it has no scheme"),
        ("", "it is empty"),
        ("http://127.0.0.1/a b", "a space"),
        ("http://127.0.0.1/x\n", "the control byte 0x0A"),
        ("http://127.0.0.1/x\tz", "the control byte 0x09"),
        ("http://127.0.0.1/\u{7F}", "the control byte 0x7F"),
        ("http://127.0.0.1/x%00.jpg", "%00"),
        ("http://127.0.0.1/x%zz", "percent escape"),
        ("http://127.0.0.1/x%4", "percent escape"),
        ("http://[::1/x", "no closing ']'"),
        ("http://127.0.0.1/é", "not ASCII"),
        ("http://exa<mple/x", "'<'"),
        ("http://127.0.0.1:80:81/x", "the port '80:81' is not a number"),
    ]

    @Test(
        "a bad --to URL: exit 2, one stderr line naming the URL and what is wrong, nothing on stdout, no I/O",
        arguments: badURLs.indices)
    func badURL(index: Int) async throws {
        let (url, reason) = Self.badURLs[index]
        for client in ["asynchttpclient", "urlsession"] {
            let result = try await Tool.blobstream(["upload", Self.sample, "--to", url, "--client", client])
            #expect(result.status == 2, "\(url): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(lines.count == 1, "\(url): \(result.stderr)")
            #expect(result.stderr.hasSuffix("\n"))
            let shown = url.replacingOccurrences(of: "\n", with: "%0A").replacingOccurrences(of: "\t", with: "%09")
                .replacingOccurrences(of: "\u{7F}", with: "%7F")
            #expect(result.stderr.contains("--to: '\(shown)' is not a valid upload URL"), "\(url): \(result.stderr)")
            #expect(result.stderr.contains(reason), "\(url): \(result.stderr)")
        }
    }

    @Test(
        "bad time limits: exit 2 with one line",
        arguments: [
            ["--connect-timeout", "0"], ["--idle-timeout", "-1"], ["--idle-timeout", "nan"],
            ["--connect-timeout", "inf"],
        ])
    func badTimeouts(arguments: [String]) async throws {
        let result = try await Tool.blobstream(["upload", Self.sample, "--to", "http://127.0.0.1:9/x"] + arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(arguments[0]))
    }

    @Test("a 307 or 308 redirect: exit 0 and the server holds the whole file (sha256), with both clients")
    func redirect() async throws {
        let server = try NginxTestServer()
        defer { server.stop() }
        let bytes = try #require(FileManager.default.contents(atPath: Self.sample))
        for client in ["asynchttpclient", "urlsession"] {
            for status in [307, 308] {
                let name = "\(client)-\(status).txt"
                let result = try await Tool.blobstream([
                    "upload", Self.sample, "--to", "\(server.baseURL)/redirect-\(status)/\(name)", "--client", client,
                ])
                #expect(result.status == 0, "\(result.stderr)")
                #expect(server.stored(name).map(Tool.sha256) == Tool.sha256(bytes), "\(name)")
            }
        }
    }

    @Test(
        "standard input or a pipe redirected by 307: exit 1 naming the redirect, never the rest of the pipe stored as the file"
    )
    func redirectOfAPipe() async throws {
        let server = try NginxTestServer()
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pipe-\(UUID().uuidString).bin")
        try Data((0..<4_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for client in ["asynchttpclient", "urlsession"] {
            for (name, command) in [
                (
                    "dash",
                    "cat '\(file.path)' 2>/dev/null | \"$BLOBSTREAM\" upload - --to \(server.baseURL)/redirect-307/dash-\(client) --client \(client)"
                ),
                (
                    "gzip",
                    "gzip -c '\(file.path)' 2>/dev/null | \"$BLOBSTREAM\" upload gzip:file:///dev/stdin --to \(server.baseURL)/redirect-307/gzip-\(client) --client \(client)"
                ),
            ] {
                // The writer's own complaint about the closed pipe (when the upload ends
                // first) is kept out of the tool's stderr.
                let result = try await Tool.shell(command)
                #expect(result.status == 1, "\(name) \(client): \(result.stderr)")
                #expect(result.stdout.isEmpty)
                #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
                #expect(
                    result.stderr.contains("HTTP 307") && result.stderr.contains("cannot be read again"),
                    "\(result.stderr)")
                #expect(server.stored("\(name)-\(client)") == nil)
            }
        }
    }

    @Test("a server answering 201 after 1 MB of 16 MB: exit 1, one line with bytes sent / length")
    func earlyAnswer() async throws {
        let peer = try EarlyAnswerPeer(answerAfter: 1 << 20)
        defer { peer.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("early-\(UUID().uuidString).bin")
        let size = 16 * 1024 * 1024
        try Data(repeating: 0x5A, count: size).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for client in ["asynchttpclient", "urlsession"] {
            let result = try await Tool.blobstream([
                "upload", file.path, "--to", "\(peer.baseURL)/files/x", "--client", client,
            ])
            #expect(result.status == 1, "\(client): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(
                result.stderr.contains("answered HTTP 201 after") && result.stderr.contains("of \(size) bytes"),
                "\(client): \(result.stderr)")
        }
    }

    @Test(
        "--idle-timeout against a peer that never reads, --connect-timeout against one that never connects, a refused port: exit 1 in time"
    )
    func timeLimits() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("stall-\(UUID().uuidString).bin")
        try Data(repeating: 0x33, count: 32 * 1024 * 1024).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let stalling = try StallingPeer()
        defer { stalling.stop() }
        let unconnectable = try StallingPeer(fillBacklog: true)
        defer { unconnectable.stop() }
        let closed = try NginxTestServer.freePort()
        for client in ["asynchttpclient", "urlsession"] {
            // Each time is the program's own run (`Tool.Result.duration`), not the wait for
            // a free slot before it. A run that stops at its arguments measures starting the
            // programs (slow under a sanitizer or a loaded machine), which the bounds leave
            // out; the slack over it is still well under the default limits (10 s to connect, 60 s idle), so a
            // limit that is not applied fails.
            let usage = try await Tool.blobstream([
                "upload", file.path, "--to", "http://127.0.0.1:0/x", "--client", client,
            ])
            let startup = usage.duration
            #expect(usage.status == 2)

            let idle = try await Tool.blobstream([
                "upload", file.path, "--to", "\(stalling.baseURL)/x", "--client", client, "--idle-timeout", "0.5",
            ])
            #expect(idle.status == 1)
            #expect(
                idle.stderr.split(separator: "\n").count == 1 && idle.stderr.contains("idle timeout"), "\(idle.stderr)")
            #expect(
                idle.duration >= .milliseconds(500) && idle.duration - startup < .seconds(4),
                "\(client): \(idle.duration), start-up \(startup)")

            let connect = try await Tool.blobstream([
                "upload", file.path, "--to", "\(unconnectable.baseURL)/x", "--client", client, "--connect-timeout",
                "0.5",
            ])
            #expect(connect.status == 1)
            #expect(
                connect.stderr.split(separator: "\n").count == 1 && connect.stderr.contains("connect timeout"),
                "\(connect.stderr)")
            #expect(
                connect.duration >= .milliseconds(500) && connect.duration - startup < .seconds(4),
                "\(client): \(connect.duration), start-up \(startup)")

            let refused = try await Tool.blobstream([
                "upload", file.path, "--to", "http://127.0.0.1:\(closed)/x", "--client", client,
            ])
            #expect(refused.status == 1)
            #expect(
                refused.stderr.split(separator: "\n").count == 1 && refused.stderr.contains("127.0.0.1:\(closed)/x"),
                "\(refused.stderr)")
            #expect(refused.duration - startup < .seconds(4), "\(client): \(refused.duration), start-up \(startup)")
        }
    }
}
