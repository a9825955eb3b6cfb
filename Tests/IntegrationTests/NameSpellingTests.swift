import Foundation
import Testing

/// `ls` prints every member name in the spelling the URL forms take back (control bytes,
/// bytes that are not UTF-8, `%`, and `!` before `/` percent-encoded): one member is one row, no
/// escape sequence reaches the terminal, and `cat` of each listed name gives that member.
@Suite("Member names: listed as the URL form reads them back")
struct NameSpellingTests {
    /// A member: its raw name, the spelling `ls` must print, its content.
    struct Member {
        var name: [UInt8]
        var spelling: String
        var content: Data
    }

    static let members: [Member] = {
        let cases: [([UInt8], String)] = [
            (Array("line\nbreak.txt".utf8), "line%0Abreak.txt"),
            (Array("tab\there.txt".utf8), "tab%09here.txt"),
            (Array("\u{1B}[31mred.txt".utf8), "%1B[31mred.txt"),
            (Array("cr\rreturn".utf8), "cr%0Dreturn"),
            (Array("del\u{7F}.txt".utf8), "del%7F.txt"),
            ([0x4B, 0xC4, 0x53, 0x45, 0x2E, 0x74, 0x78, 0x74], "K%C4SE.txt"), // latin-1 "KÄSE.txt"
            ([0x62, 0x61, 0x64, 0xFF, 0xFE], "bad%FF%FE"),
            ([0x63, 0x31, 0xC2, 0x9B, 0x32, 0x4A], "c1%C2%9B2J"), // U+009B, a C1 CSI
            (Array("100%.txt".utf8), "100%25.txt"),
            (Array("%41.txt".utf8), "%2541.txt"), // not "A.txt"
            (Array("A.txt".utf8), "A.txt"),
            (Array("wow!.txt".utf8), "wow!.txt"),
            (Array("dir!/inner.txt".utf8), "dir%21/inner.txt"),
            (Array("naïve ☃ space.txt".utf8), "naïve ☃ space.txt"),
            (Array("plain/dir/name.txt".utf8), "plain/dir/name.txt"),
        ]
        return cases.enumerated().map { i, c in
            Member(
                name: c.0, spelling: c.1,
                content: Data("member \(i): \(c.1)\n".utf8) + Data(repeating: UInt8(i), count: 100 * i))
        }
    }()

    /// A temporary folder holding `names.tar` (and its gzip) with every member above.
    static func makeArchive() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-names-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var tar = TarWriter()
        for m in members { tar.add(name: m.name, content: m.content) }
        try tar.archive.write(to: dir.appendingPathComponent("names.tar"))
        return dir
    }

    static var tool: String { Tool.binDirectory.appendingPathComponent("blobstream").path }

    @Test("ls prints one row per member, each name in its escaped spelling, and no control byte")
    func listing() async throws {
        let dir = try Self.makeArchive()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = await BoundedRun.run(Self.tool, ["ls", dir.appendingPathComponent("names.tar").path])
        #expect(r.status == 0, "\(r.stderrText)")
        let rows = r.stdout.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast()
        #expect(rows.count == Self.members.count + 1, "one header row and one row per member")
        let names = rows.dropFirst().map { row in
            String(
                decoding: row.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)[0], as: UTF8.self)
        }
        #expect(names == Self.members.map(\.spelling))
        let controls = r.stdout.filter { ($0 < 0x20 && $0 != 0x0A && $0 != 0x09) || $0 == 0x7F }
        #expect(controls.isEmpty, "no control byte but the row and field separators")
        #expect(String(validating: r.stdout, as: UTF8.self) != nil, "the listing is UTF-8")
    }

    @Test("each listed name reads back: archive: URLs, PATH!/name, and through gzip")
    func readBack() async throws {
        let dir = try Self.makeArchive()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tar = dir.appendingPathComponent("names.tar").path
        let gz = await BoundedRun.run("/bin/sh", ["-c", "gzip -k '\(tar)'"])
        #expect(gz.status == 0)
        let listed = await BoundedRun.run(Self.tool, ["ls", tar])
        let names = String(decoding: listed.stdout, as: UTF8.self).split(separator: "\n").dropFirst()
            .map { String($0.split(separator: "\t", omittingEmptySubsequences: false)[0]) }
        #expect(names.count == Self.members.count)
        for (name, member) in zip(names, Self.members) {
            let forms = [
                "archive:file://\(tar)!/\(name)",
                "\(tar)!/\(name)",
                "archive:gzip:file://\(tar).gz!/\(name)",
            ]
            for form in forms {
                let r = await BoundedRun.run(Self.tool, ["cat", form])
                #expect(
                    r.status == 0 && Tool.sha256(r.stdout) == Tool.sha256(member.content), "\(form): \(r.stderrText)")
            }
            let sum = await BoundedRun.run(Self.tool, ["checksum", "\(tar)!/\(name)"])
            #expect(String(decoding: sum.stdout, as: UTF8.self) == "\(Tool.sha256(member.content))  \(tar)!/\(name)\n")
        }
    }

    @Test("info of a listed member names it as listed, on one row")
    func info() async throws {
        let dir = try Self.makeArchive()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tar = dir.appendingPathComponent("names.tar").path
        for member in Self.members {
            let r = await BoundedRun.run(Self.tool, ["info", "\(tar)!/\(member.spelling)"])
            let rows = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n")
            #expect(r.status == 0 && rows.count == 2, "\(member.spelling): \(r.stderrText)")
            let fields =
                rows.last.map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) } ?? []
            #expect(fields.first == "\(tar)!/\(member.spelling)")
            #expect(fields.count == 5 && fields[3] == String(member.content.count))
        }
    }

    @Test("an error about a name prints it escaped: one line, no escape sequence")
    func errorsEscapeNames() async throws {
        let dir = try Self.makeArchive()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tar = dir.appendingPathComponent("names.tar").path
        // Raw control bytes in the argument (a shell can pass them) and in their %XX spelling.
        for (argument, shown) in [
            ("\(tar)!/%1B[2Jmissing%0Aforged row", "%1B[2Jmissing%0Aforged row"),
            ("\(tar)!/\u{1B}[2Jmissing\nforged row", "%1B[2Jmissing%0Aforged row"),
            ("\(dir.path)/no\u{1B}]0;title\u{07}such\nfile", "no%1B]0;title%07such%0Afile"),
        ] {
            let r = await BoundedRun.run(Self.tool, ["cat", argument])
            #expect(r.status == 1 && r.stdout.isEmpty)
            let text = r.stderrText
            #expect(text.hasSuffix("\n") && text.filter { $0 == "\n" }.count == 1, "one line: \(text)")
            #expect(
                !text.dropLast().contains { $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false },
                "no control byte: \(text)")
            #expect(text.contains(shown), "names \(shown): \(text)")
        }
    }
}
