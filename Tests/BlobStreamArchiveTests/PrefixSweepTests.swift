import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamGzip
import Foundation
import Testing

/// The corruption sweep for reads that stop before the end: every flip of a gzip file, a
/// tar.gz, a tar.xz, a tar.zst in frames and a zip (deflate and stored), each read whole, as a prefix of exactly
/// the member's size, as a shorter prefix, and as a range at an offset — without an index
/// and with one built before the flip — the way `blobstream cat --offset --length` reads:
/// the bytes, then `readOnToCheckPoint()`. Each outcome is an error, or the right bytes;
/// never wrong bytes with success (silent-wrong), which fails the test.
@Suite("Prefix reads: the flip sweep")
struct PrefixSweepTests {
    /// How a read is shaped: where it starts and how many bytes it asks for (nil: all).
    struct Shape: CustomStringConvertible {
        var label: String
        var offset: Int
        var length: Int?
        var description: String { label }

        static func all(size: Int) -> [Shape] {
            [
                Shape(label: "whole", offset: 0, length: nil),
                Shape(label: "--length size", offset: 0, length: size),
                Shape(label: "--length size/3", offset: 0, length: size / 3),
                Shape(label: "--offset size/4 --length size/4", offset: size / 4, length: size / 4),
            ]
        }
    }

    struct Input {
        var label: String
        /// Makes the file at `path` from the tree in `tree`.
        var make: (_ tree: String, _ path: String) throws -> Void
        /// The bytes a read delivers when the file is whole.
        var expected: Data
        /// A source over the file at `path`, with the index built from the intact file or not.
        var source: (_ path: String, _ index: IndexBox?) throws -> any BlobDataSource
        /// Builds the index of the intact file at `path`.
        var buildIndex: (_ path: String) throws -> IndexBox
    }

    /// An index of either kind.
    enum IndexBox {
        case gzip(GzipIndex, parallelism: Int)
        case archive(ArchiveIndex)
    }

    static let text = textBytes(300_000, seed: 77)
    static let member = "sub/text.txt"

    static func archive(_ label: String, _ arguments: [String]) -> Input {
        Input(
            label: label,
            make: { tree, path in try run("bsdtar", arguments + ["-cf", path, "-C", tree, "."]) },
            expected: text,
            source: { path, index in
                guard case .archive(let index) = index else {
                    return ArchiveMemberDataSource(archive: path, member: member, index: .none)
                }
                return ArchiveMemberDataSource(archive: path, member: member, index: .index(index))
            },
            buildIndex: { .archive(try ArchiveIndex.build(archiveAt: $0, gzipSpacing: 64 * 1024)) })
    }

    static func gzip(parallelism: Int) -> Input {
        Input(
            label: "gz (index parallelism \(parallelism))",
            make: { tree, path in
                try run("sh", ["-c", "gzip -c -n '\(tree)/\(member)' > '\(path)'"])
            },
            expected: text,
            source: { path, index in
                guard case .gzip(let index, let parallelism) = index else {
                    return GzipDataSource(upstream: FileDataSource(path: path), name: path)
                }
                return GzipDataSource(
                    upstream: FileDataSource(path: path), name: path, index: index, parallelism: parallelism)
            },
            buildIndex: { .gzip(try GzipIndex.build(fileAtPath: $0, spacing: 48 * 1024), parallelism: parallelism) })
    }

    /// `archive:gzip:a.tar.gz!/member`: a plain tar inside a gzip source. With the gzip
    /// index, the source can seek and checks every chunk: the tar's headers are walked and
    /// the member read in place, its end (and a prefix of it) waiting for the chunk checks.
    static func tarInGzip(parallelism: Int) -> Input {
        Input(
            label: "archive:gzip: tar (gzip index parallelism \(parallelism))",
            make: { tree, path in
                try run("sh", ["-c", "bsdtar --format ustar -cf - -C '\(tree)' . | gzip -c -n > '\(path)'"])
            },
            expected: text,
            source: { path, index in
                guard case .gzip(let index, let parallelism) = index else {
                    let gzip = GzipDataSource(upstream: FileDataSource(path: path), name: path)
                    return ArchiveMemberDataSource(archive: gzip, member: member, name: path)
                }
                let gzip = GzipDataSource(
                    upstream: FileDataSource(path: path), name: path, index: index, parallelism: parallelism)
                return ArchiveMemberDataSource(archive: gzip, member: member, name: path)
            },
            buildIndex: { .gzip(try GzipIndex.build(fileAtPath: $0, spacing: 48 * 1024), parallelism: parallelism) })
    }

    /// A tar.zst in frames of 64 KiB of tar each (every frame with its content checksum, no
    /// seek table): with its index, a member is entered at the frame that holds its header and
    /// one of several frames is decoded in parallel.
    static var tarZstdFrames: Input {
        var input = archive("tar.zst (frames)", [])
        input.make = { tree, path in
            try run(
                "sh",
                [
                    "-c",
                    "bsdtar --format ustar -cf '\(path).tar' -C '\(tree)' . && split -b 65536 '\(path).tar' '\(path).part.' && for f in '\(path).part.'*; do zstd -q -c --check \"$f\"; done > '\(path)' && rm -f '\(path).tar' '\(path).part.'*",
                ])
        }
        return input
    }

    static var inputs: [Input] {
        [
            tarInGzip(parallelism: 1),
            tarInGzip(parallelism: 2),
            gzip(parallelism: 1),
            gzip(parallelism: 2),
            archive("tar.gz", ["-z"]),
            archive("tar.xz", ["-J"]),
            tarZstdFrames,
            archive("zip", ["--format", "zip"]),
            archive("stored.zip", ["--format", "zip", "--options", "zip:compression=store"]),
        ]
    }

    /// Reads as `blobstream cat --offset --length` does: lent blocks or copies up to
    /// `length`, then on to the next check point. The bytes, and the error if any.
    static func read(_ source: any BlobDataSource, _ shape: Shape, readOn: Bool = true) -> (Data, BlobStreamError?) {
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        defer { stream.close() }
        if shape.offset > 0 { _ = stream.setProperty(NSNumber(value: shape.offset), forKey: .fileCurrentOffsetKey) }
        stream.open()
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 16_411)
        var lent: UnsafeMutablePointer<UInt8>?
        var lentCount = 0
        let error = { () -> BlobStreamError? in
            (stream.streamError as? BlobStreamError) ?? BlobStreamError(.sourceFailed, "no error")
        }
        while shape.length.map({ out.count < $0 }) ?? true {
            let left = shape.length.map { $0 - out.count } ?? Int.max
            if stream.getBuffer(&lent, length: &lentCount), let lent {
                out.append(lent, count: min(left, lentCount))
                continue
            }
            let n = stream.read(&buffer, maxLength: min(left, buffer.count))
            if n == 0 { return (out, nil) }
            if n < 0 { return (out, error()) }
            out.append(contentsOf: buffer[0..<n])
        }
        guard readOn else { return (out, nil) }
        do {
            try stream.readOnToCheckPoint()
        } catch {
            return (out, error)
        }
        return (out, nil)
    }

    @Test("every flip × whole, --length size, shorter --length, --offset + --length, with and without an index")
    func sweep() throws {
        let dir = try makeTemporaryDirectory("prefix-sweep")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(Self.text, to: dir + "/tree/" + Self.member)
        try write(randomBytes(20_000, seed: 5), to: dir + "/tree/after.bin")
        var silentWrong = 0
        // The same prefixes without reading on: wrong bytes with success, which the sweep
        // must see there (else it could not tell reading on from not).
        var wrongWithoutReadingOn = 0
        var errors = 0
        var rightBytes = 0
        for input in Self.inputs {
            let original = "\(dir)/original.\(input.label.filter { $0.isLetter || $0 == "." })"
            try input.make(dir + "/tree", original)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: original))
            let index = try input.buildIndex(original)
            let shapes = Shape.all(size: input.expected.count)
            // The intact file reads right in every shape: otherwise the sweep proves nothing.
            for shape in shapes {
                for box in [nil, index] {
                    let (data, error) = Self.read(try input.source(original, box), shape)
                    #expect(error == nil && data == Self.slice(input.expected, shape), "\(input.label) intact \(shape)")
                }
            }
            let path = original + ".flipped"
            for at in CorruptionSweepTests.flipPositions(bytes.count) {
                var data = bytes
                data[at] ^= UInt8(1 << (at % 8))
                try data.write(to: URL(fileURLWithPath: path))
                for shape in shapes {
                    for box in [nil, index] {
                        if shape.length != nil {
                            let (unread, unreadError) = Self.read(try input.source(path, box), shape, readOn: false)
                            if unreadError == nil && unread != Self.slice(input.expected, shape) {
                                wrongWithoutReadingOn += 1
                            }
                        }
                        let (got, error) = Self.read(try input.source(path, box), shape)
                        if error != nil {
                            errors += 1
                        } else if got == Self.slice(input.expected, shape) {
                            rightBytes += 1
                        } else {
                            silentWrong += 1
                            Issue.record(
                                "SILENT-WRONG: \(input.label) flip@\(at) \(shape) \(box == nil ? "without" : "with") index: \(got.count) bytes, sha256 \(sha256(got)), expected \(sha256(Self.slice(input.expected, shape)))"
                            )
                        }
                    }
                }
            }
        }
        print(
            "prefix sweep: errors \(errors), right bytes \(rightBytes), SILENT-WRONG \(silentWrong); without reading on: \(wrongWithoutReadingOn) wrong"
        )
        #expect(silentWrong == 0)
        #expect(wrongWithoutReadingOn > 0)
        #expect(errors > 0 && rightBytes > 0)
    }

    static func slice(_ data: Data, _ shape: Shape) -> Data {
        let end = shape.length.map { min(data.count, shape.offset + $0) } ?? data.count
        return data.subdata(in: shape.offset..<end)
    }

    @Test("what a member says it checks: nothing in a plain tar or a tar.zst without checksums; the rest at its end")
    func whatMembersCheck() throws {
        let dir = try makeTemporaryDirectory("prefix-kinds")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(Self.text, to: dir + "/tree/" + Self.member)
        let tree = dir + "/tree"
        try run("bsdtar", ["--format", "ustar", "-cf", dir + "/a.tar", "-C", tree, "."])
        try run("bsdtar", ["--zstd", "-cf", dir + "/nocheck.tar.zst", "-C", tree, "."])
        try run("zstd", ["-q", "-f", "--check", dir + "/a.tar", "-o", dir + "/check.tar.zst"])
        try run("bsdtar", ["-czf", dir + "/a.tar.gz", "-C", tree, "."])
        try run("bsdtar", ["--format", "zip", "-cf", dir + "/a.zip", "-C", tree, "."])
        let expected: [(String, ArchiveVerification, BlobVerifiedPrefix)] = [
            ("a.tar", .wholeArchive, .nothingToCheck),
            ("nocheck.tar.zst", .wholeArchive, .nothingToCheck),
            ("check.tar.zst", .wholeArchive, .checked(upTo: 0)),
            ("a.tar.gz", .wholeArchive, .checked(upTo: 0)),
            ("a.tar.gz", .memberOnly, .nothingToCheck),
            ("a.zip", .memberOnly, .checked(upTo: 0)),
        ]
        for (file, verification, prefix) in expected {
            let source = ArchiveMemberDataSource(
                archive: dir + "/" + file, member: Self.member, verification: verification, index: .none)
            let stream = BlobInputStream(dataSource: source, mode: .synchronous)
            stream.open()
            var byte: UInt8 = 0
            #expect(stream.read(&byte, maxLength: 1) == 1)
            #expect(source.verifiedPrefix == prefix, "\(file) \(verification)")
            stream.close()
        }
    }
}
