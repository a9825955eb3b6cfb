import Foundation
import Testing

/// A zip member stored as `back\slash.txt`: `ls` and `ls --json` print the stored name (as
/// `unzip -l` and Python's zipfile do; libarchive alone turns it into `back/slash.txt`), and
/// `cat` of the name as listed gives the member's bytes, without and with the member index.
@Suite("Zip names with backslashes: one spelling in ls, the index and cat")
struct ZipBackslashNameTests {
    static var tool: String { Tool.binDirectory.appendingPathComponent("blobstream").path }

    /// The members in the order written: a name libarchive rewrites, the real path it would
    /// be taken for, a name libarchive keeps (it holds a `/`).
    static let members: [(name: String, content: Data)] = [
        (#"back\slash.txt"#, Data("stored with a backslash\n".utf8) + Data(repeating: 7, count: 5000)),
        ("back/slash.txt", Data("stored in a folder\n".utf8)),
        (#"dir/a\b.txt"#, Data("kept as stored\n".utf8)),
    ]

    /// A folder holding `A.zip`: the committed `Fixtures/zip/backslash-names-first-deflated.zip`,
    /// written by Python's zipfile from `members` (the first deflated; see Fixtures/zip/README.md).
    static func makeZip() throws -> URL {
        let zip = try Tool.fixture(
            "zip/backslash-names-first-deflated.zip",
            sha256: "141c3d1428151c778e4715d6fab268ca2ce0cf08112316ef2c82b2e60a10c288")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "blobstream-zipname-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try zip.write(to: dir.appendingPathComponent("A.zip"))
        return dir
    }

    /// The names `ls` prints (its first column, the header row left out).
    static func listedNames(_ zip: String) async -> [String] {
        let r = await BoundedRun.run(tool, ["ls", zip])
        #expect(r.status == 0, "\(r.stderrText)")
        return String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").dropFirst()
            .map { String($0.split(separator: "\t", omittingEmptySubsequences: false)[0]) }
    }

    @Test("ls prints the stored name, which cat reads back, without and with the index")
    func storedNameReadsBack() async throws {
        let dir = try Self.makeZip()
        defer { try? FileManager.default.removeItem(at: dir) }
        let archive = dir.appendingPathComponent("A.zip").path
        // What Python's zipfile lists (and unzip -l): the stored names.
        let namelist = "import sys, zipfile; print(*zipfile.ZipFile(sys.argv[1]).namelist(), sep='\\n')"
        let python = await BoundedRun.run("/usr/bin/env", ["python3", "-c", namelist, archive])
        #expect(python.status == 0)
        #expect(String(decoding: python.stdout, as: UTF8.self) == Self.members.map { $0.name + "\n" }.joined())

        for indexed in [false, true] {
            if indexed {
                let index = await BoundedRun.run(Self.tool, ["index", archive])
                #expect(index.status == 0, "\(index.stderrText)")
                #expect(FileManager.default.fileExists(atPath: archive + ".blobidx"))
            }
            let names = await Self.listedNames(archive)
            #expect(names == Self.members.map(\.name), "indexed: \(indexed)")
            let json = await BoundedRun.run(Self.tool, ["ls", "--json", archive])
            let rows = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [[String: Any]])
            #expect(rows.map { $0["path"] as? String } == Self.members.map(\.name))
            #expect(rows.map { $0["escapedPath"] as? String } == Self.members.map(\.name))
            for (name, member) in zip(names, Self.members) {
                for form in ["archive:file://\(archive)!/\(name)", "\(archive)!/\(name)"] {
                    let r = await BoundedRun.run(Self.tool, ["cat", form])
                    #expect(
                        r.status == 0 && Tool.sha256(r.stdout) == Tool.sha256(member.content),
                        "\(form), indexed: \(indexed): \(r.stderrText)")
                }
            }
        }
    }
}
