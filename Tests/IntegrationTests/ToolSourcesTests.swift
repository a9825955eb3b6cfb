import Foundation
import NginxTestServer
import Testing

@Suite("The blobstream tool: archives, gzip, assets, uploads")
struct ToolSourcesTests {
    var archives: String { Tool.fixtures.appendingPathComponent("archives").path }
    var library: String { Tool.fixtures.appendingPathComponent("library").path }

    @Test("PATH!/member and archive:gzip: URLs give what tar -xO gives")
    func archiveMembers() async throws {
        for member in ["DCIM/100TEST/IMG_0001.JPG", "DCIM/100TEST/IMG_0002.JPG", "notes/sample.txt"] {
            let reference = try await Tool.run("/usr/bin/tar", ["-xOf", archives + "/photos.tar", member])
            let plain = try await Tool.blobstream(["checksum", archives + "/photos.tar!/" + member])
            let url = try await Tool.blobstream([
                "cat", "archive:gzip:file://" + archives + "/photos.tar.gz!/" + member,
            ])
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(plain.text.hasPrefix(Tool.sha256(reference.stdout)))
            #expect(url.status == 0, "\(url.stderr)")
            #expect(Tool.sha256(url.stdout) == Tool.sha256(reference.stdout))
        }
        let missing = try await Tool.blobstream(["cat", archives + "/photos.tar!/DCIM/nope.jpg"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("DCIM/nope.jpg"))
        #expect(missing.stderr.contains("photos.tar"))
    }

    @Test("gzip: equals gzip -dc, with an offset")
    func gzip() async throws {
        let reference = try await Tool.run("/usr/bin/gzip", ["-dc", archives + "/sample.txt.gz"])
        let ours = try await Tool.blobstream(["cat", "--offset", "1000", "gzip:file://" + archives + "/sample.txt.gz"])
        #expect(ours.status == 0, "\(ours.stderr)")
        #expect(ours.stdout == reference.stdout.suffix(from: 1000))
    }

    @Test("--inflate zlib, isal and auto give what gzip -dc gives")
    func inflateEngines() async throws {
        let reference = try await Tool.run("/usr/bin/gzip", ["-dc", archives + "/sample.txt.gz"])
        for engine in ["zlib", "isal", "auto"] {
            let ours = try await Tool.blobstream([
                "cat", "--inflate", engine, "gzip:file://" + archives + "/sample.txt.gz",
            ])
            #expect(ours.status == 0, "\(engine): \(ours.stderr)")
            #expect(Tool.sha256(ours.stdout) == Tool.sha256(reference.stdout), "\(engine)")
        }
    }

    @Test("ls lists members with a header line; ls --library lists assets")
    func listing() async throws {
        let members = try await Tool.blobstream(["ls", archives + "/photos.tar.gz"])
        #expect(members.status == 0, "\(members.stderr)")
        let lines = members.text.split(separator: "\n")
        #expect(lines.first == "path\tsize\ttype\tmtime")
        #expect(lines.contains("DCIM/100TEST/IMG_0002.JPG\t48000\tfile\t1970-01-01T00:00:00Z"))

        let assets = try await Tool.blobstream(["ls", "--library", library])
        #expect(assets.status == 0, "\(assets.stderr)")
        let rows = assets.text.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(rows.first == ["url", "size", "edited", "mtime", "path"])
        #expect(rows.count == 5)
        let edited = try #require(rows.first { $0.last == "IMG_0002.JPG" })
        #expect(edited[1] == "5120" && edited[2] == "yes")
        // Each listed URL streams the listed size, through --library.
        for row in rows.dropFirst() {
            let cat = try await Tool.blobstream(["cat", "--library", library, row[0]])
            #expect(cat.status == 0, "\(cat.stderr)")
            #expect("\(cat.stdout.count)" == row[1])
        }
        let noLibrary = try await Tool.blobstream(["cat", rows[1][0]])
        #expect(noLibrary.status == 1)
        #expect(noLibrary.stderr.contains("--library"))
    }

    @Test("upload: stored byte-exact by nginx, with both clients; failures exit 1 with one line")
    func upload() async throws {
        let server = try NginxTestServer()
        defer { server.stop() }
        let member = archives + "/photos.tar.gz!/DCIM/100TEST/IMG_0002.JPG"
        let reference = try await Tool.run(
            "/usr/bin/tar", ["-xzOf", archives + "/photos.tar.gz", "DCIM/100TEST/IMG_0002.JPG"])
        for client in ["asynchttpclient", "urlsession"] {
            let result = try await Tool.blobstream([
                "upload", member, "--to", "\(server.baseURL)/files/\(client).jpg", "--client", client,
            ])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.isEmpty, "no progress when stderr is not a terminal")
            #expect(server.stored("\(client).jpg").map(Tool.sha256) == Tool.sha256(reference.stdout))
        }
        let offset = try await Tool.blobstream([
            "upload", "--offset", "1000", member, "--to", "\(server.baseURL)/files/tail.jpg",
        ])
        #expect(offset.status == 0, "\(offset.stderr)")
        #expect(server.stored("tail.jpg") == reference.stdout.suffix(from: 1000))

        // A gzip stream read from a pipe: the upload must not open it twice (a probe for
        // its length would eat the bytes a second reader needs).
        let sample = Tool.fixtures.appendingPathComponent("files/sample.txt").path
        let piped = try await Tool.shell(
            "gzip -c '\(sample)' | \"$BLOBSTREAM\" upload gzip:file:///dev/stdin --to \(server.baseURL)/files/piped.txt"
        )
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(server.stored("piped.txt") == FileManager.default.contents(atPath: sample))

        let denied = try await Tool.blobstream(["upload", member, "--to", "\(server.baseURL)/deny/x"])
        #expect(denied.status == 1)
        #expect(denied.stderr.contains("403"))
        #expect(denied.stderr.split(separator: "\n").count == 1)
        let missing = try await Tool.blobstream(["upload", "/no/such.jpg", "--to", "\(server.baseURL)/files/x"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("/no/such.jpg"))
        #expect(server.stored("x") == nil)
        let usage = try await Tool.blobstream(["upload", member, "--to", "ftp://x"])
        #expect(usage.status == 2)
    }
}
