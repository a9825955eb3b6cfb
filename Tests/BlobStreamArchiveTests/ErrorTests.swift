import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("Truncated and corrupt archives")
struct ErrorTests {
    static let labels = [
        "pax.tar", "gnu.tar", "tar.gz", "tar.bz2", "tar.xz", "tar.zst", "zip", "streamed.zip", "7z", "cpio", "iso",
        "ar",
    ]

    /// Every member of an archive cut at 20 points: the exact bytes, or an error naming the
    /// archive and the member; never a short success.
    @Test("an archive cut at 20 points never gives a short success", arguments: labels)
    func truncatedEverywhere(label: String) throws {
        let fixtures = try ArchiveFixtures.get()
        guard let archive = fixtures.archives[label] else {
            Issue.record("\(label) could not be made: \(fixtures.unavailable[label] ?? "?")")
            return
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: archive))
        let dir = try makeTemporaryDirectory("cut")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var failures = 0
        for i in 1...20 {
            let cut = data.count * i / 21 + i // odd offsets, not block-aligned
            let path = "\(dir)/cut-\(cut).\(label)"
            try data.prefix(cut).write(to: URL(fileURLWithPath: path))
            for (member, bytes) in fixtures.expectedFiles(label) {
                let result = drain(ArchiveMemberDataSource(archive: path, member: member), size: 30_011)
                if result.last == 0 {
                    #expect(
                        result.data == bytes,
                        "\(label) cut at \(cut): \(member) ended cleanly with \(result.data.count) of \(bytes.count) bytes"
                    )
                } else {
                    failures += 1
                    #expect(result.error != nil)
                    #expect(
                        result.error?.message.contains(path) == true && result.error?.message.contains(member) == true,
                        "\(label) cut at \(cut): \(String(describing: result.error))")
                }
            }
        }
        #expect(failures > 0)
    }

    /// A tar whose only member is cut inside its data, at 20 points: always `.truncated`.
    @Test("a member cut inside its data is .truncated", arguments: ["tar", "tar.gz", "tar.xz", "zip", "cpio", "7z"])
    func truncatedInsideMember(format: String) throws {
        let dir = try makeTemporaryDirectory("cutmember")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = randomBytes(400_000, seed: 77)
        try write(bytes, to: dir + "/tree/only.bin")
        let flags: [String] =
            switch format {
            case "tar": ["--format", "pax"]
            case "tar.gz": ["--format", "pax", "-z"]
            case "tar.xz": ["--format", "pax", "-J"]
            case "zip": ["--format", "zip", "--options", "zip:compression=store"]
            case "cpio": ["--format", "newc"]
            default: ["--format", "7zip", "--options", "7zip:compression=store"]
            }
        try run("bsdtar", flags + ["-cf", dir + "/a." + format, "-C", dir + "/tree", "only.bin"])
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/a." + format))
        for i in 1...20 {
            // Inside the member's bytes: past the first header, before the last 1,000 bytes of data.
            let cut = format == "7z" ? 40 + (bytes.count - 1_000) * i / 20 : 1_100 + (bytes.count - 2_000) * i / 21
            let path = "\(dir)/cut-\(i).\(format)"
            try data.prefix(cut).write(to: URL(fileURLWithPath: path))
            let result = drain(ArchiveMemberDataSource(archive: path, member: "only.bin"))
            #expect(
                result.last == -1, "\(format) cut at \(cut): ended with \(result.last) after \(result.data.count) bytes"
            )
            #expect(result.data.count < bytes.count)
            let code = result.error?.code
            #expect(
                code == .truncated || code == .corrupt, "\(format) cut at \(cut): \(String(describing: result.error))")
            if format == "tar" || format == "tar.gz" || format == "cpio" {
                #expect(code == .truncated, "\(format) cut at \(cut): \(String(describing: result.error?.message))")
            }
            #expect(result.error?.message.contains("only.bin") == true)
            // Over a pipe as well (streaming formats).
            if format != "7z" && format != "zip" {
                let piped = drain(ArchiveMemberDataSource(archive: pipeSource(data.prefix(cut)), member: "only.bin"))
                #expect(piped.last == -1 && piped.data.count < bytes.count, "\(format) piped cut at \(cut)")
            }
        }
    }

    @Test("a bad tar header checksum is .corrupt naming the member")
    func badHeaderChecksum() throws {
        let dir = try makeTemporaryDirectory("badsum")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(Data("first\n".utf8), to: dir + "/tree/first.txt")
        try write(Data("second\n".utf8), to: dir + "/tree/second.txt")
        try run(
            "bsdtar", ["--format", "ustar", "-cf", dir + "/ok.tar", "-C", dir + "/tree", "first.txt", "second.txt"])
        var data = try Data(contentsOf: URL(fileURLWithPath: dir + "/ok.tar"))
        data[1024 + 101] ^= 0x01 // the mode field of the second header: its checksum no longer matches
        try data.write(to: URL(fileURLWithPath: dir + "/bad.tar"))
        let first = drain(ArchiveMemberDataSource(archive: dir + "/bad.tar", member: "first.txt"))
        #expect(first.last == 0 && first.data == Data("first\n".utf8))
        let second = drain(ArchiveMemberDataSource(archive: dir + "/bad.tar", member: "second.txt"))
        #expect(second.last == -1)
        #expect(second.error?.code == .corrupt, "\(String(describing: second.error))")
        #expect(
            second.error?.message.contains("second.txt") == true && second.error?.message.contains("bad.tar") == true)
        #expect(second.error?.cause is LibArchiveError)
    }

    /// Compressible text, garbled in the middle of its compressed form: the decompressor
    /// (or the format's check) refuses it. (libarchive never checks a gzip trailer's CRC-32,
    /// as `bsdtar` shows; the source inflates gzip itself and does: see "Integrity".)
    @Test(
        "corrupt compressed data is an error, never a clean end",
        arguments: ["tar.gz", "tar.bz2", "tar.xz", "tar.zst", "zip", "7z"])
    func corruptCompressed(format: String) throws {
        let dir = try makeTemporaryDirectory("corrupt")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = textBytes(2_000_000, seed: 5)
        try write(bytes, to: dir + "/tree/text.txt")
        // A fixed mtime makes the archive, and so what the corruption hits, the same in every
        // run. (Which bytes it hits matters: a garbled bzip2 block can decode to MORE bytes
        // than it held, covering the member's end before the block's CRC is checked, which
        // only the default verification, reading on, then catches; see "Integrity".)
        try run("touch", ["-d", "@1000000000", dir + "/tree/text.txt"])
        let flags: [String] =
            switch format {
            case "tar.gz": ["-z"]
            case "tar.bz2": ["-j"]
            case "tar.xz": ["-J"]
            case "tar.zst": ["--zstd"]
            case "zip": ["--format", "zip"]
            default: ["--format", "7zip"]
            }
        guard (try? run("bsdtar", flags + ["-cf", dir + "/ok." + format, "-C", dir + "/tree", "text.txt"])) != nil
        else {
            if format != "tar.zst" { Issue.record("bsdtar cannot write \(format)") }
            return
        }
        var data = try Data(contentsOf: URL(fileURLWithPath: dir + "/ok." + format))
        for i in 0..<64 { data[data.count / 2 + i] ^= 0x5A }
        let path = dir + "/bad." + format
        try data.write(to: URL(fileURLWithPath: path))
        if format == "tar.gz" {
            // A checked gzip upstream, read to its end by the default verification.
            let checked = drain(
                ArchiveMemberDataSource(
                    archive: GzipDataSource(upstream: FileDataSource(path: path)), member: "text.txt", name: path))
            #expect(checked.last == -1, "tar.gz over GzipDataSource: ended with \(checked.last)")
            #expect(checked.error?.message.contains("text.txt") == true)
        }
        let result = drain(ArchiveMemberDataSource(archive: path, member: "text.txt"))
        #expect(
            result.last == -1,
            "\(format): ended with \(result.last), bytes equal: \(result.data == bytes), \(result.data.count) of \(bytes.count), first difference at \(zip(result.data, bytes).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset ?? -1), \(path)"
        )
        #expect(
            result.error?.code == .corrupt || result.error?.code == .truncated, "\(String(describing: result.error))")
        #expect(result.error?.message.contains("text.txt") == true)
    }

    @Test("a zip CRC mismatch is .corrupt")
    func zipCRC() throws {
        let fixtures = try ArchiveFixtures.get()
        var data = try Data(contentsOf: URL(fileURLWithPath: fixtures.archives["stored.zip"]!))
        let range = try #require(data.range(of: Data("hello, archive".utf8)))
        data[range.lowerBound] = UInt8(ascii: "J")
        let dir = try makeTemporaryDirectory("crc")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try data.write(to: URL(fileURLWithPath: dir + "/crc.zip"))
        // The central-directory reader (seekable upstream) reports the CRC mismatch; the
        // streaming reader (a pipe) takes the mismatch to mean that the data descriptor it
        // found was not one, reads on, and finds more bytes than the header gives.
        let seekable = drain(ArchiveMemberDataSource(archive: dir + "/crc.zip", member: "a.txt"))
        #expect(seekable.last == -1, "a CRC mismatch ended with \(seekable.last)")
        #expect(seekable.error?.code == .corrupt, "\(String(describing: seekable.error))")
        #expect(seekable.error?.message.contains("CRC") == true, "\(String(describing: seekable.error))")
        let piped = drain(ArchiveMemberDataSource(archive: pipeSource(data), member: "a.txt", name: "crc.zip"))
        #expect(piped.last == -1, "a CRC mismatch ended with \(piped.last)")
        #expect(piped.error?.code == .corrupt, "\(String(describing: piped.error))")
    }

    @Test("the conformance check's error path: a truncated archive fails with a cause")
    func conformanceFailing() throws {
        let fixtures = try ArchiveFixtures.get()
        let data = try Data(contentsOf: URL(fileURLWithPath: fixtures.archives["pax.tar"]!))
        let entries = try ArchiveListing.entries(ofArchiveAt: fixtures.archives["pax.tar"]!)
        #expect(entries.contains { stripDotSlash($0.path) == "sub/big.bin" })
        let cut = data.prefix(data.count / 2)
        let findings = SourceConformance.check(
            expected: fixtures.files["a.txt"]!,
            failing: { ArchiveMemberDataSource(archive: InMemoryDataSource(data: cut), member: "sub/big.bin") },
            makeSource: { ArchiveMemberDataSource(archive: InMemoryDataSource(data: data), member: "a.txt") })
        // The failing source fails only if big.bin straddles the cut; check that it does.
        let straddles = drain(ArchiveMemberDataSource(archive: InMemoryDataSource(data: cut), member: "sub/big.bin"))
        #expect(straddles.last == -1)
        #expect(findings.isEmpty, "\(findings)")
    }
}
