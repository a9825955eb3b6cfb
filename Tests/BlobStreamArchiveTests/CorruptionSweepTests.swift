import BlobStream
import BlobStreamArchive
import Foundation
import Testing

/// Real archives of every compressed format, each flipped at a fixed set of positions and
/// cut at a fixed set of lengths; every member of every mutated archive read with the
/// default verification. Each outcome is an error naming the archive and the member, the
/// right bytes (the flip hit something no member's bytes depend on: an mtime, padding, a
/// field libarchive does not use), or wrong bytes with a clean end — silent-wrong, which
/// fails the test, except where the format has no check over the bytes the flip changed
/// ("unprotected", each case justified below). The counts are printed for the notes.
@Suite("Truncation and flip sweep")
struct CorruptionSweepTests {
    /// The tree: a small text, random bytes (stored as they are by most compressors), text.
    static let tree: [(String, Data)] = [
        ("a.txt", Data("hello, archive\n".utf8)),
        ("sub/rand.bin", randomBytes(40_000, seed: 41)),
        ("sub/text.txt", textBytes(120_000, seed: 42)),
    ]

    /// Format label → how it is made (bsdtar's arguments, or a shell command), and whether a
    /// wrong result can be blamed on the format.
    struct Format: Sendable {
        var label: String
        var make: @Sendable (_ tree: String, _ out: String) throws -> Void
        /// Why wrong bytes with a clean end are not silent-wrong for a given flip, or nil
        /// when every wrong result counts as silent-wrong.
        var unprotected: (@Sendable (_ original: Data, _ position: Int, _ member: Data) -> String?)?
    }

    static let formats: [Format] = [
        Format(label: "tar.gz", make: { try run("bsdtar", ["-czf", $1, "-C", $0, "."]) }),
        Format(label: "tar.bz2", make: { try run("bsdtar", ["-cjf", $1, "-C", $0, "."]) }),
        Format(label: "tar.xz", make: { try run("bsdtar", ["-cJf", $1, "-C", $0, "."]) }),
        // With the frame's content checksum, as the zstd tool writes it.
        Format(
            label: "tar.zst",
            make: {
                try run("bsdtar", ["-cf", $1 + ".tar", "-C", $0, "."])
                try run("zstd", ["-q", "-f", "--check", $1 + ".tar", "-o", $1])
            }),
        // As libarchive 3.6 writes it: no content checksum, so a flipped literal or raw
        // block byte decodes to a wrong byte that nothing can detect.
        Format(
            label: "tar.zst-nocheck", make: { try run("bsdtar", ["--zstd", "-cf", $1, "-C", $0, "."]) },
            unprotected: { _, _, _ in "a zstd frame without content checksum checks nothing" }),
        Format(label: "zip", make: { try run("bsdtar", ["--format", "zip", "-cf", $1, "-C", $0, "."]) }),
        Format(
            label: "stored.zip",
            make: {
                try run("bsdtar", ["--format", "zip", "--options", "zip:compression=store", "-cf", $1, "-C", $0, "."])
            }),
        Format(label: "7z", make: { try run("bsdtar", ["--format", "7zip", "-cf", $1, "-C", $0, "."]) }),
        // Not compressed: the tar format has no checksum over a member's body, only over its
        // header. A flip that lands inside the member's stored body is unprotected.
        Format(
            label: "tar", make: { try run("bsdtar", ["--format", "ustar", "-cf", $1, "-C", $0, "."]) },
            unprotected: { original, position, member in
                guard let body = original.range(of: member), body.contains(position) else { return nil }
                return "the flip is inside the member's body in an uncompressed tar, which has no checksum"
            }),
    ]

    struct Counts: CustomStringConvertible {
        var inputs = 0, flips = 0, truncations = 0, reads = 0
        var errors = 0, intact = 0, unprotected = 0, silentWrong = 0
        /// Reads of a cut archive that gave the right bytes (the member and its checks were whole).
        var cutIntact = 0
        mutating func add(_ other: Counts) {
            inputs += other.inputs
            flips += other.flips
            truncations += other.truncations
            reads += other.reads
            errors += other.errors
            intact += other.intact
            unprotected += other.unprotected
            silentWrong += other.silentWrong
            cutIntact += other.cutIntact
        }
        var description: String {
            "inputs \(inputs), flips \(flips), truncations \(truncations), member reads \(reads): errors \(errors), right bytes \(intact) (of which from cut archives \(cutIntact)), unprotected \(unprotected), SILENT-WRONG \(silentWrong)"
        }
    }

    /// Positions spread over the whole archive (header, body, trailer), and its last bytes.
    static func flipPositions(_ size: Int) -> [Int] {
        var positions = (0..<48).map { i in min(size - 1, size * i / 48 + (i * 7) % 13) }
        positions += (1...8).map { size - $0 }
        return Array(Set(positions)).sorted()
    }

    /// Lengths spread over the archive, and a few bytes short of its end.
    static func cutLengths(_ size: Int) -> [Int] {
        var lengths = (1...20).map { i in size * i / 21 + i }
        lengths += [0, size - 1, size - 3, size - 4, size - 8]
        return Array(Set(lengths.filter { $0 >= 0 && $0 < size })).sorted()
    }

    @Test("every member of every flipped or cut archive: an error or the right bytes, never silent-wrong")
    func sweep() throws {
        let started = Date()
        let dir = try makeTemporaryDirectory("sweep")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (name, data) in Self.tree { try write(data, to: dir + "/tree/" + name) }
        try run("find", [dir + "/tree", "-exec", "touch", "-h", "-d", "@1700000000", "{}", "+"])
        var total = Counts()
        var rows: [String] = []
        for format in Self.formats {
            let original = dir + "/original." + format.label
            try format.make(dir + "/tree", original)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: original))
            var counts = Counts()
            var reasons = Set<String>()
            // The intact archive reads back whole: otherwise the sweep would prove nothing.
            for (member, expected) in Self.tree {
                let result = drain(ArchiveMemberDataSource(archive: original, member: member))
                #expect(
                    result.last == 0 && result.data == expected,
                    "\(format.label) intact \(member): \(String(describing: result.error))")
            }
            let mutations: [(String, Data, Int?)] =
                Self.flipPositions(bytes.count).map { at in
                    var data = bytes
                    data[at] ^= UInt8(1 << (at % 8))
                    return ("flip@\(at)", data, at)
                } + Self.cutLengths(bytes.count).map { ("cut@\($0)", bytes.prefix($0), nil) }
            for (what, data, flipped) in mutations {
                if flipped != nil { counts.flips += 1 } else { counts.truncations += 1 }
                counts.inputs += 1
                let path = "\(dir)/\(what).\(format.label)"
                try data.write(to: URL(fileURLWithPath: path))
                defer { try? FileManager.default.removeItem(atPath: path) }
                for (member, expected) in Self.tree {
                    counts.reads += 1
                    let result = drain(ArchiveMemberDataSource(archive: path, member: member), size: 16_411)
                    if result.last != 0 {
                        counts.errors += 1
                        let message = result.error?.message ?? ""
                        #expect(
                            message.contains(path) && message.contains(member),
                            "\(format.label) \(what) \(member): the error does not name the archive and the member: \(String(describing: result.error))"
                        )
                    } else if result.data == expected {
                        counts.intact += 1
                        if flipped == nil { counts.cutIntact += 1 }
                    } else if let flipped, let why = format.unprotected?(bytes, flipped, expected) {
                        counts.unprotected += 1
                        reasons.insert(why)
                    } else {
                        counts.silentWrong += 1
                        Issue.record(
                            "SILENT-WRONG: \(format.label) \(what), member \(member): clean end with \(result.data.count) bytes, expected \(expected.count) (sha256 \(sha256(result.data)) vs \(sha256(expected)))"
                        )
                    }
                }
            }
            rows.append(
                "sweep \(format.label) (\(bytes.count) bytes): \(counts)"
                    + (reasons.isEmpty ? "" : " [unprotected: \(reasons.sorted().joined(separator: "; "))]"))
            total.add(counts)
        }
        let seconds = Date().timeIntervalSince(started)
        for row in rows { print(row) }
        print("sweep total: \(total), in \(String(format: "%.1f", seconds)) s")
        #expect(total.silentWrong == 0)
        #expect(total.errors > 0 && total.intact > 0)
    }
}
