import Foundation
import Testing

/// `blobstream cat|checksum zstd:…` on files the `zstd` program wrote.
@Suite("The blobstream tool: zstd: sources")
struct ToolZstdTests {
    @Test("cat and checksum of zstd:FILE (a relative path): zstd -dc's bytes; --long N for a large window")
    func catAndChecksum() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-zstd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let made = try await Tool.shell(
            """
            cd '\(dir.path)' && head -c 3000000 /dev/urandom > data && zstd -q -3 -o data.zst data \
            && cat data | zstd -q -3 --long=28 > long.zst && (cat data.zst; echo junk) > junk.zst
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let data = try Data(contentsOf: dir.appendingPathComponent("data"))

        let cat = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" cat zstd:data.zst | sha256sum")
        #expect(cat.status == 0, "\(cat.stderr)")
        #expect(cat.text.hasPrefix(Tool.sha256(data)), "\(cat.text)")
        let sum = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" checksum --offset 1000000 zstd:data.zst")
        #expect(sum.text.hasPrefix(Tool.sha256(data.dropFirst(1_000_000))), "\(sum.text) \(sum.stderr)")

        let refused = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" cat zstd:long.zst > /dev/null")
        #expect(refused.status == 1)
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("long.zst") && refused.stderr.contains("--long=28"), "\(refused.stderr)")
        let allowed = try await Tool.shell(
            "cd '\(dir.path)' && \"$BLOBSTREAM\" cat --long 28 zstd:long.zst | sha256sum")
        #expect(allowed.status == 0 && allowed.text.hasPrefix(Tool.sha256(data)), "\(allowed.stderr)")
        let usage = try await Tool.blobstream(["cat", "--long", "40", "zstd:x.zst"])
        #expect(usage.status == 2 && usage.stderr.contains("--long"), "\(usage.stderr)")

        let junk = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" cat zstd:junk.zst > /dev/null")
        #expect(junk.status == 1)
        let frames = try Data(contentsOf: dir.appendingPathComponent("data.zst"))
        #expect(
            junk.stderr.contains("junk.zst") && junk.stderr.contains("compressed offset \(frames.count)"),
            "\(junk.stderr)")
    }

    @Test(
        "compress --seekable: zstd -d reads it whole, cat --offset one frame; inputs never replaced; a failing SOURCE leaves the file"
    )
    func compressSeekable() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-zstdc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let made = try await Tool.shell(
            """
            cd '\(dir.path)' && head -c 3000000 /dev/urandom | base64 > data \
            && gzip -c data > data.gz && head -c 100000 data.gz > cut.gz && echo keep > kept.zst
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let data = try Data(contentsOf: dir.appendingPathComponent("data"))

        let compress = try await Tool.shell(
            """
            cd '\(dir.path)' && "$BLOBSTREAM" compress --seekable --frame-size 256KiB gzip:data.gz -o s.zst \
            && zstd -dc s.zst | sha256sum && "$BLOBSTREAM" compress --seekable --level 1 data | zstd -dc | sha256sum
            """)
        #expect(compress.status == 0, "\(compress.stderr)")
        #expect(compress.stderr.isEmpty, "\(compress.stderr)")
        #expect(compress.text == "\(Tool.sha256(data))  -\n\(Tool.sha256(data))  -\n", "\(compress.text)")
        let file = try Data(contentsOf: dir.appendingPathComponent("s.zst"))
        let table = file.suffix(4).withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        #expect(UInt32(littleEndian: table) == 0x8F92_EAB1, "ends with the seekable magic number")

        let offset = data.count - 1000
        let read = try await Tool.shell(
            "cd '\(dir.path)' && \"$BLOBSTREAM\" cat --offset \(offset) --length 500 zstd:s.zst | sha256sum")
        #expect(read.status == 0 && read.text.hasPrefix(Tool.sha256(data[offset..<offset + 500])), "\(read.stderr)")

        for (arguments, needle) in [
            (["compress", "data", "-o", "x.zst"], "--seekable"),
            (["compress", "--seekable", "data", "-o", "data"], "the input 'data'"),
            (["compress", "--seekable", "gzip:data.gz", "-o", "data.gz"], "the input 'data.gz'"),
            (["compress", "--seekable", "--frame-size", "2GiB", "data", "-o", "x.zst"], "--frame-size"),
            (["compress", "--seekable", "--level", "40", "data", "-o", "x.zst"], "--level"),
            (["compress", "--seekable", "--offset", "5", "data", "-o", "x.zst"], "--offset"),
        ] {
            let refused = try await Tool.shell(
                "cd '\(dir.path)' && \"$BLOBSTREAM\" " + arguments.map { "'\($0)'" }.joined(separator: " "))
            #expect(refused.status == 2, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains(needle), "\(arguments): \(refused.stderr)")
        }
        #expect(try Data(contentsOf: dir.appendingPathComponent("data")) == data)

        let failed = try await Tool.shell(
            "cd '\(dir.path)' && \"$BLOBSTREAM\" compress --seekable gzip:cut.gz -o kept.zst; echo \"status $?\"; ls -a"
        )
        #expect(failed.text.contains("status 1"), "\(failed.text) \(failed.stderr)")
        #expect(failed.stderr.contains("cut.gz") && failed.stderr.split(separator: "\n").count == 1, "\(failed.stderr)")
        #expect(try String(contentsOf: dir.appendingPathComponent("kept.zst"), encoding: .utf8) == "keep\n")
        #expect(!failed.text.contains(".blobstream-"), "no temporary file left: \(failed.text)")

        // index: a seekable file needs none; a plain one is pointed at compress --seekable.
        let plain = try await Tool.shell("cd '\(dir.path)' && zstd -q data -o plain.zst")
        try #require(plain.status == 0, "\(plain.stderr)")
        for (name, needle) in [("s.zst", "seek table; no index is written"), ("plain.zst", "compress --seekable")] {
            let index = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" index \(name); ls")
            #expect(index.stderr.contains(name) && index.stderr.contains(needle), "\(index.stderr)")
            #expect(index.stderr.split(separator: "\n").count == 1 && !index.text.contains(".blobidx"), "\(index.text)")
        }
    }

    @Test(
        "index of a tar.zst: ARCHIVE.blobidx beside it; cat finds members through it, ls lists from it; one frame is said"
    )
    func tarZstdIndex() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-tzst-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let made = try await Tool.shell(
            """
            cd '\(dir.path)' && mkdir t && head -c 2000000 /dev/urandom > t/big.bin && seq 1 50000 > t/small.txt \
            && tar -cf a.tar -C t big.bin small.txt && zstd -q --check a.tar -o one.tar.zst \
            && "$BLOBSTREAM" compress --seekable --frame-size 128KiB a.tar -o frames.tar.zst
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let files = [
            "big.bin": try Data(contentsOf: dir.appendingPathComponent("t/big.bin")),
            "small.txt": try Data(contentsOf: dir.appendingPathComponent("t/small.txt")),
        ]
        for archive in ["one.tar.zst", "frames.tar.zst"] {
            let index = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" index \(archive)")
            #expect(index.status == 0, "\(archive): \(index.stderr)")
            #expect(index.text.hasPrefix("\(archive).blobidx\t2 members (tar.zst)\t"), "\(index.text)")
            // One frame cannot be entered midway: said, with the way to a copy that can.
            #expect(
                index.stderr.contains("compress --seekable") == (archive == "one.tar.zst"),
                "\(archive): \(index.stderr)")
            for (name, data) in files {
                let cat = try await Tool.shell(
                    "cd '\(dir.path)' && \"$BLOBSTREAM\" cat --verbose '\(archive)!/\(name)' | sha256sum")
                #expect(cat.status == 0 && cat.text.hasPrefix(Tool.sha256(data)), "\(archive) \(name): \(cat.stderr)")
                #expect(cat.stderr.contains("found through its member index"), "\(archive) \(name): \(cat.stderr)")
            }
            let listed = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" ls \(archive)")
            #expect(listed.status == 0 && listed.text.contains("big.bin\t2000000\tfile"), "\(listed.text)")
        }
        // zstd: names the stream, not the archive: no member index, the seekable answer.
        let stream = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" index zstd:frames.tar.zst")
        #expect(stream.status == 1 && stream.stderr.contains("seek table"), "\(stream.stderr)")
    }

    @Test(
        "index of a .zst in frames with no seek table: FILE.zst.zstidx; cat --offset enters its frame through it, a stale one is said"
    )
    func zstdFrameIndex() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "blobstream-zstidx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let made = try await Tool.shell(
            """
            cd '\(dir.path)' && head -c 3000000 /dev/urandom > data && split -b 500000 data piece. \
            && for f in piece.*; do zstd -q -c --check "$f"; done > frames.zst
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let data = try Data(contentsOf: dir.appendingPathComponent("data"))
        let index = try await Tool.shell("cd '\(dir.path)' && \"$BLOBSTREAM\" index frames.zst")
        #expect(
            index.status == 0 && index.text.hasPrefix("frames.zst.zstidx\t6 frames\t"), "\(index.text) \(index.stderr)")
        let read = try await Tool.shell(
            "cd '\(dir.path)' && \"$BLOBSTREAM\" cat --verbose --offset 2600000 --length 1000 zstd:frames.zst | sha256sum"
        )
        #expect(read.status == 0 && read.text.hasPrefix(Tool.sha256(data[2_600_000..<2_601_000])), "\(read.stderr)")
        #expect(read.stderr.contains("entered through its frame index (6 frames)"), "\(read.stderr)")
        // Touched after indexing: not used, and said; the bytes are still right.
        let stale = try await Tool.shell(
            "cd '\(dir.path)' && touch frames.zst && \"$BLOBSTREAM\" cat --verbose --offset 2600000 --length 1000 zstd:frames.zst | sha256sum"
        )
        #expect(stale.status == 0 && stale.text.hasPrefix(Tool.sha256(data[2_600_000..<2_601_000])), "\(stale.stderr)")
        #expect(stale.stderr.contains("an index was found but not used"), "\(stale.stderr)")
    }
}
