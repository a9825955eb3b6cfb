import Foundation
import Testing

/// `blobstream ls -l` against GNU `tar -tvf`, and `ls --json`, on tars GNU tar makes here.
@Suite("ls -l: tar -tv's layout; ls --json")
struct ListLongTests {
    static var tool: String { Tool.binDirectory.appendingPathComponent("blobstream").path }

    /// Header types libarchive reads differently from GNU tar, written by Python's tarfile
    /// (committed under Fixtures/tar, made by its make-fixtures.py; see its README):
    /// `types.tar` (a contiguous file, a directory whose header gives a size, block and
    /// character devices, a FIFO) and `pax-global.tar` (owner and group from a pax global
    /// header, which libarchive ignores, overridden by one member's own pax header), and
    /// `globals.tar` (global headers one after another), with their SHA-256.
    static let pythonTars = [
        ("types.tar", "b5fed2f08eae353943d0c6c9b0195313e2e33c66f30776dd14931c9a8907773e"),
        ("pax-global.tar", "9f58f88a38eb5ece5c85ba65d473b40a9af8edc80f7f34104085c505830fea41"),
        ("globals.tar", "b5dfed4db253912cf8a318d58acd1a790255d7e3fc0547c0618371916f354aee"),
    ]

    /// Lines `tar -tvf` prints for each archive of `makeTars`.
    static let lineCounts = [
        "names.tar": 17, "numeric.tar": 17, "owners.tar": 17, "names.tar.gz": 17, "types.tar": 7,
        "pax-global.tar": 3, "sparse-globals.tar": 5,
    ]

    /// A folder with a tree of odd names, modes and links, and tars of it made by GNU tar:
    /// `names.tar` (owners by name), `numeric.tar` (`--numeric-owner`: ids only),
    /// `owners.tar` (a long owner name that widens tar's column), `names.tar.gz`; the committed
    /// tars of `pythonTars`; and `sparse-globals.tar` (sparse files, then `globals.tar`).
    static func makeTars() async throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-ls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (name, sum) in pythonTars {
            try Tool.fixture("tar/" + name, sha256: sum).write(to: dir.appendingPathComponent(name))
        }
        let script = #"""
            set -e
            cd "$1"
            mkdir t && cd t
            printf 'hello\n' > plain.txt
            printf 'x' > "$(printf 'new\nline')"
            printf 'xx' > "$(printf 'tab\there')"
            printf 'xxx' > 'back\slash'
            printf 'y' > "$(printf 'bad\304byte')"
            printf 'z' > "$(printf 'c1\302\233ctl')"
            printf 'd' > "$(printf 'del\177')"
            printf 'w' > 'naïve ☃.jpg'
            head -c 123456 /dev/zero > big.bin
            printf '#!/bin/sh\n' > run.sh && chmod 0755 run.sh
            printf 's' > secret && chmod 0600 secret
            mkdir sub && chmod 4755 sub && mkdir sticky && chmod 1777 sticky && mkdir gid && chmod 2750 gid
            ln -s 'naïve ☃.jpg' link && ln plain.txt hard
            cd ..
            M='--mtime=2021-03-04 05:06:07 UTC'
            tar -cf names.tar "$M" --owner=alice:1234 --group=staff:99 -C t .
            tar -cf numeric.tar "$M" --numeric-owner --owner=1234 --group=99 -C t .
            tar -cf owners.tar "$M" --owner=averyveryverylongownername:7 --group=somelonggroupname:8 -C t .
            gzip -k names.tar
            # Sparse files (an old GNU `S` header whose map of 7 stretches needs an extension
            # header; pax sparse 1.0) before the global headers: the walk that finds the
            # owners goes past them.
            for k in 0 1 2 3 4 5 6; do
                printf 'data' | dd of=holes bs=1 seek=$((k * 50000)) conv=notrunc status=none
            done
            truncate -s 400000 holes
            tar -cf sparse-globals.tar "$M" --owner=alice:1234 --group=staff:99 --format=gnu --sparse holes
            tar -cf sparse-pax.tar "$M" --owner=alice:1234 --group=staff:99 --format=pax --sparse \
                --sparse-version=1.0 holes
            tar -Af sparse-globals.tar sparse-pax.tar
            tar -Af sparse-globals.tar globals.tar
            """#
        let r = await BoundedRun.run("/bin/bash", ["-c", script, "make-tars", dir.path])
        #expect(r.status == 0, "\(r.stderrText)")
        return dir
    }

    @Test(
        "ls -l prints what tar -tvf prints (TZ and owners as tar shows them; contiguous files, sized directories, devices, pax global owners)",
        arguments: [
            "names.tar", "numeric.tar", "owners.tar", "names.tar.gz", "types.tar", "pax-global.tar",
            "sparse-globals.tar",
        ],
        ["UTC", "Asia/Kolkata"])
    func sameAsTar(archive: String, zone: String) async throws {
        let dir = try await Self.makeTars()
        defer { try? FileManager.default.removeItem(at: dir) }
        let env = ["TZ=\(zone)", "LC_ALL=C.UTF-8"]
        let ours = await BoundedRun.run(
            "/usr/bin/env", env + [Self.tool, "ls", "-l", archive], workingDirectory: dir.path)
        let tar = await BoundedRun.run("/usr/bin/env", env + ["tar", "-tvf", archive], workingDirectory: dir.path)
        #expect(tar.status == 0 && ours.status == 0, "\(ours.stderrText)")
        #expect(
            ours.stdout == tar.stdout,
            "ours:\n\(String(decoding: ours.stdout, as: UTF8.self))\ntar:\n\(String(decoding: tar.stdout, as: UTF8.self))"
        )
        #expect(
            ours.stdout.split(separator: UInt8(ascii: "\n")).count == Self.lineCounts[archive],
            "one line per entry, no header")
    }

    @Test("ls --json: one document holding each member's facts")
    func json() async throws {
        let dir = try await Self.makeTars()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = await BoundedRun.run(
            Self.tool, ["ls", "--json", "names.tar", "numeric.tar"], workingDirectory: dir.path)
        #expect(r.status == 0, "\(r.stderrText)")
        let members = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
        #expect(members.count == 34)
        func member(_ archive: String, _ path: String) -> [String: Any]? {
            members.first { $0["archive"] as? String == archive && $0["path"] as? String == path }
        }
        let run = try #require(member("names.tar", "./run.sh"))
        #expect(run["type"] as? String == "file" && run["size"] as? Int == 10)
        #expect(run["mode"] as? String == "0755" && run["modeString"] as? String == "-rwxr-xr-x")
        #expect(run["mtime"] as? String == "2021-03-04T05:06:07Z")
        #expect(run["owner"] as? String == "alice" && run["group"] as? String == "staff")
        #expect(run["uid"] as? Int == 1234 && run["gid"] as? Int == 99)
        let sub = try #require(member("names.tar", "./sub/"))
        #expect(sub["type"] as? String == "directory" && sub["mode"] as? String == "4755")
        let link = try #require(member("names.tar", "./link"))
        #expect(link["type"] as? String == "symlink" && link["linkTarget"] as? String == "naïve ☃.jpg")
        // Whichever of the two names tar met second is the hard link to the first.
        let hard = try #require(
            members.first { $0["archive"] as? String == "names.tar" && $0["type"] as? String == "hardlink" })
        #expect(Set([hard["path"] as? String, hard["linkTarget"] as? String]) == Set(["./plain.txt", "./hard"]))
        let bad = try #require(members.first { $0["escapedPath"] as? String == "./bad%C4byte" })
        #expect(bad["size"] as? Int == 1, "a name that is not UTF-8 keeps a spelling that reads it back")
        let numeric = try #require(member("numeric.tar", "./secret"))
        #expect(numeric["owner"] == nil && numeric["uid"] as? Int == 1234 && numeric["mode"] as? String == "0600")

        // A member read back through its escaped path.
        let back = await BoundedRun.run(Self.tool, ["cat", "names.tar!/./bad%C4byte"], workingDirectory: dir.path)
        #expect(back.status == 0 && back.stdout == Data("y".utf8), "\(back.stderrText)")
    }

    @Test("ls without -l keeps its tab-separated rows with a header")
    func defaultKept() async throws {
        let dir = try await Self.makeTars()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = await BoundedRun.run(Self.tool, ["ls", "names.tar"], workingDirectory: dir.path)
        #expect(String(decoding: r.stdout, as: UTF8.self).hasPrefix("path\tsize\ttype\tmtime\n"))
        let both = await BoundedRun.run(Self.tool, ["ls", "-l", "--json", "names.tar"], workingDirectory: dir.path)
        #expect(both.status == 2)
        let broken = await BoundedRun.run(
            Self.tool, ["ls", "--json", "names.tar", "missing.tar"], workingDirectory: dir.path)
        #expect(broken.status == 1 && broken.stdout.isEmpty && broken.stderrText.contains("missing.tar"))
    }

    @Test(
        "a member behind Solaris tar's `X` extended header (CPython's misc/regtype-suntar): the regular file tar -tvf shows"
    )
    func solarisExtendedHeader() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-ls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        /// A pax record: its length (counting itself), the key and value, a newline.
        func record(_ key: String, _ value: String) -> String {
            let body = " \(key)=\(value)\n"
            var length = body.utf8.count + 1
            while String(length).count + body.utf8.count > length { length += 1 }
            return String(length) + body
        }
        var tar = TarWriter()
        tar.add(
            name: Array("PaxHeaders/regtype-suntar".utf8),
            content: Data((record("uname", "sun") + record("gname", "os")).utf8),
            kind: .solarisExtended)
        tar.add(name: Array("misc/regtype-suntar".utf8), content: Data("solaris\n".utf8))
        tar.add(name: Array("misc/after".utf8), content: Data("x".utf8))
        try tar.archive.write(to: dir.appendingPathComponent("suntar.tar"))
        let env = ["TZ=UTC", "LC_ALL=C.UTF-8"]
        let ours = await BoundedRun.run(
            "/usr/bin/env", env + [Self.tool, "ls", "-l", "suntar.tar"], workingDirectory: dir.path)
        let gnu = await BoundedRun.run("/usr/bin/env", env + ["tar", "-tvf", "suntar.tar"], workingDirectory: dir.path)
        #expect(gnu.status == 0 && ours.status == 0, "\(ours.stderrText)")
        let text = String(decoding: ours.stdout, as: UTF8.self)
        #expect(ours.stdout == gnu.stdout, "ours:\n\(text)\ntar:\n\(String(decoding: gnu.stdout, as: UTF8.self))")
        #expect(text.hasPrefix("-rw-r--r-- sun/os "), "\(text)")
        let member = await BoundedRun.run(
            Self.tool, ["cat", "suntar.tar!/misc/regtype-suntar"], workingDirectory: dir.path)
        #expect(member.status == 0 && member.stdout == Data("solaris\n".utf8), "\(member.stderrText)")
    }
}
