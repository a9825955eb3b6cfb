import Foundation
import Testing

@Suite("The blobstream tool")
struct ToolTests {
    static let samples = ["files/sample.txt", "files/sample.bin", "files/empty.bin", "files/photo.jpg"]

    @Test("checksum prints what sha256sum prints", arguments: samples)
    func checksumMatchesSha256sum(sample: String) async throws {
        let path = Tool.fixtures.appendingPathComponent(sample).path
        let ours = try await Tool.blobstream(["checksum", path])
        let reference = try await Tool.run("/usr/bin/sha256sum", [path])
        #expect(ours.status == 0, "\(ours.stderr)")
        #expect(ours.text == reference.text)
        #expect(ours.stderr.isEmpty, "nothing on stderr when piped")
    }

    @Test("cat --offset N equals tail -c +N+1", arguments: [0, 1, 1000, 65_535, 65_536])
    func catOffset(offset: Int) async throws {
        let path = Tool.fixtures.appendingPathComponent("files/sample.bin").path
        let ours = try await Tool.blobstream(["cat", "--offset", String(offset), path])
        let reference = try await Tool.run("/usr/bin/tail", ["-c", "+\(offset + 1)", path])
        #expect(ours.status == 0, "\(ours.stderr)")
        #expect(Tool.sha256(ours.stdout) == Tool.sha256(reference.stdout))
        #expect(ours.stdout.count == 65_536 - offset)
    }

    @Test("cat writes several sources one after another, from paths, file URLs and stdin")
    func catSeveral() async throws {
        let txt = Tool.fixtures.appendingPathComponent("files/sample.txt").path
        let bin = Tool.fixtures.appendingPathComponent("files/sample.bin").path
        let stdin = Data("from stdin\n".utf8)
        let ours = try await Tool.blobstream(["cat", txt, "file://" + bin, "-"], stdin: stdin)
        let expected =
            try Data(contentsOf: URL(fileURLWithPath: txt)) + Data(contentsOf: URL(fileURLWithPath: bin)) + stdin
        #expect(ours.status == 0, "\(ours.stderr)")
        #expect(Tool.sha256(ours.stdout) == Tool.sha256(expected))
    }

    @Test("a FIFO from process substitution is read sequentially, with an offset")
    func processSubstitution() async throws {
        let result = try await Tool.shell(#""$BLOBSTREAM" cat --offset 3 <(printf 'abcdefgh') <(printf 'xyz')"#)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text == "defgh")
        let info = try await Tool.shell(#""$BLOBSTREAM" info <(printf 'abc')"#)
        #expect(info.text.contains("\tunknown\tread-and-discard"), "\(info.text)")
    }

    @Test("info prints a header and tab-separated fields")
    func info() async throws {
        let path = Tool.fixtures.appendingPathComponent("files/sample.bin").path
        let result = try await Tool.blobstream(["info", path])
        #expect(result.status == 0)
        let lines = result.text.split(separator: "\n").map {
            $0.split(separator: "\t", omittingEmptySubsequences: false)
        }
        #expect(lines.count == 2)
        #expect(lines.first == ["name", "url", "kind", "length", "offset"])
        #expect(lines.last?[3] == "65536")
        #expect(lines.last?[4] == "seek")
    }

    @Test("failures: one line on stderr naming what failed, exit status 1")
    func failures() async throws {
        let missing = try await Tool.blobstream(["cat", "/no/such/file.jpg"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("/no/such/file.jpg"))
        #expect(missing.stderr.split(separator: "\n").count == 1)
        #expect(missing.stdout.isEmpty)

        let directory = try await Tool.blobstream(["checksum", Tool.fixtures.path])
        #expect(directory.status == 1)
        #expect(directory.stderr.contains(Tool.fixtures.path))

        let sample = Tool.fixtures.appendingPathComponent("files/sample.txt").path
        let pastEnd = try await Tool.blobstream(["cat", "--offset", "19293", sample])
        #expect(pastEnd.status == 1)
        #expect(pastEnd.stderr.contains("19293"))
        #expect(pastEnd.stdout.isEmpty)

        let scheme = try await Tool.blobstream(["cat", "nope://x"])
        #expect(scheme.status == 1)
        #expect(scheme.stderr.contains("'nope'"))

        // The other sources still come out, as with cat.
        let mixed = try await Tool.blobstream(["checksum", "/no/such/a", sample])
        #expect(mixed.status == 1)
        #expect(mixed.text.hasSuffix("  \(sample)\n"))
    }

    @Test("usage errors exit with status 2")
    func usage() async throws {
        #expect(try await Tool.blobstream(["frobnicate"]).status == 2)
        #expect(try await Tool.blobstream(["cat", "--offset", "-5", "x"]).status == 2)
        #expect(try await Tool.blobstream(["cat", "--offset", "many", "x"]).status == 2)
        let help = try await Tool.blobstream(["--help"])
        #expect(help.status == 0)
        #expect(help.text.contains("checksum"))
    }

    @Test(
        "upload runs in blobstream; --client urlsession hands over to blobstream-urlsession: its usage, its exit statuses; a clear error without it"
    )
    func handOver() async throws {
        let help = try await Tool.blobstream(["help", "upload"])
        #expect(help.status == 0 && help.text.contains("--client"), "\(help.text)\(help.stderr)")
        let missing = try await Tool.blobstream(["upload", "x"])
        #expect(missing.status == 2 && missing.stderr.contains("--to"), "\(missing.stderr)")
        let missingURLSession = try await Tool.blobstream(["upload", "--client", "urlsession", "x"])
        #expect(
            missingURLSession.status == 2 && missingURLSession.stderr.contains("--to"), "\(missingURLSession.stderr)")
        // A copy of blobstream alone in a folder: the AsyncHTTPClient upload runs in it (and
        // fails on the missing source, status 1); the hand-over fails and says why.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-alone-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let alone = folder.appendingPathComponent("blobstream")
        try FileManager.default.copyItem(at: Tool.binDirectory.appendingPathComponent("blobstream"), to: alone)
        let inProcess = try await Tool.run(alone.path, ["upload", "/nonexistent/x", "--to", "http://127.0.0.1:9/"])
        #expect(inProcess.status == 1)
        #expect(
            inProcess.stderr.contains("/nonexistent/x") && !inProcess.stderr.contains("blobstream-urlsession"),
            "\(inProcess.stderr)")
        let result = try await Tool.run(
            alone.path, ["upload", "--client", "urlsession", "x", "--to", "http://127.0.0.1:9/"])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("blobstream-urlsession") && result.stderr.contains(folder.path), "\(result.stderr)")
        // The reading commands need no second program.
        let checksum = try await Tool.run(
            alone.path, ["checksum", Tool.fixtures.appendingPathComponent("files/empty.bin").path])
        #expect(checksum.status == 0)
        #expect(
            checksum.text.hasPrefix("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  "),
            "\(checksum.text)")
    }

    @Test("a closed stdout ends quietly")
    func closedStdout() async throws {
        let path = Tool.fixtures.appendingPathComponent("files/sample.bin").path
        let result = try await Tool.shell(
            #"for i in $(seq 50); do echo "\#(path)"; done | xargs "$BLOBSTREAM" cat | head -c 10 >/dev/null; echo "${PIPESTATUS[2]}""#
        )
        #expect(result.text == "0\n")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    @Test("the demo streams every sample in both modes with the same bytes")
    func demo() async throws {
        let result = try await Tool.blobstream(["demo", "--fixtures", Tool.fixtures.path])
        #expect(result.status == 0, "\(result.stderr)")
        for sample in Self.samples {
            let data = try Data(contentsOf: Tool.fixtures.appendingPathComponent(sample))
            let rows = result.text.split(separator: "\n").filter {
                $0.hasPrefix(Tool.fixtures.path + "/" + sample + "\t")
            }
            #expect(rows.count == 2, "one row per mode for \(sample)")
            for row in rows {
                let fields = row.split(separator: "\t")
                #expect(fields[2] == "\(data.count)")
                #expect(String(fields[3]) == Tool.sha256(data))
                #expect(fields[4].hasPrefix("open") && fields[4].hasSuffix("end"))
            }
        }
    }
}

@Suite("Committed fixtures")
struct FixtureTests {
    /// Every `| \`path\` | … | \`sha256\` |` row of every README.md under Fixtures/.
    static func listed() throws -> [(path: String, sha256: String)] {
        var rows: [(String, String)] = []
        let enumerator = FileManager.default.enumerator(atPath: Tool.fixtures.path)
        while let name = enumerator?.nextObject() as? String {
            if (name as NSString).lastPathComponent == ".build" {
                enumerator?.skipDescendants() // the consumer package's build folder
                continue
            }
            guard name.hasSuffix("README.md") else { continue }
            let folder = (name as NSString).deletingLastPathComponent
            let text = try String(contentsOf: Tool.fixtures.appendingPathComponent(name), encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("| `") {
                let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
                guard let sha = cells.last, sha.count == 66, let first = cells.first else { continue }
                let path = first.trimmingCharacters(in: CharacterSet(charactersIn: "`"))
                rows.append(
                    (
                        folder.isEmpty ? path : folder + "/" + path,
                        sha.trimmingCharacters(in: CharacterSet(charactersIn: "`"))
                    ))
            }
        }
        return rows
    }

    @Test("each fixture matches the SHA-256 its README lists")
    func checksums() throws {
        let rows = try Self.listed()
        #expect(rows.count >= 4)
        for row in rows {
            let data = try Data(contentsOf: Tool.fixtures.appendingPathComponent(row.path))
            #expect(Tool.sha256(data) == row.sha256, "\(row.path)")
        }
    }

    @Test("the generator makes the same bytes again")
    func generatorIsDeterministic() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fixtures-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await Tool.run(
            Tool.binDirectory.appendingPathComponent("blobstream-fixtures").path, [folder.path])
        #expect(result.status == 0, "\(result.stderr)")
        let committed = try String(contentsOf: Tool.fixtures.appendingPathComponent("README.md"), encoding: .utf8)
        let made = try String(contentsOf: folder.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(made == committed)
    }
}
