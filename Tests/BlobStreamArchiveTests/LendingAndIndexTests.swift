import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamTestSupport
import Foundation
import Testing

/// Reads `source` through a synchronous stream the way `blobstream cat` does: `getBuffer`
/// first (the member lends libarchive's block), `read` when nothing is lent.
func drainLending(_ source: any BlobDataSource, readSize: Int = 4_099) -> (drained: Drained, lent: Int) {
    let stream = BlobInputStream(dataSource: source, mode: .synchronous)
    stream.open()
    var out = Data()
    var lentBytes = 0
    var pointer: UnsafeMutablePointer<UInt8>?
    var count = 0
    var buffer = [UInt8](repeating: 0, count: readSize)
    var last = 0
    while true {
        if stream.getBuffer(&pointer, length: &count) {
            #expect(count > 0 && pointer != nil)
            out.append(pointer!, count: count)
            lentBytes += count
            continue
        }
        last = stream.read(&buffer, maxLength: readSize)
        if last <= 0 { break }
        out.append(buffer, count: last)
    }
    let error =
        (stream.streamError as? BlobStreamError)?.cause as? BlobStreamError ?? stream.streamError as? BlobStreamError
    let length = source.length
    stream.close()
    return (Drained(data: out, last: last, error: error, length: length), lentBytes)
}

/// An upstream over bytes in memory that names its content with
/// `.blobContentIdentityKey` as told: a test can hand out the same identity for different
/// bytes, which a file never does, to prove that remembered header positions are checked.
final class IdentifiedBytes: BlobDataSource, @unchecked Sendable {
    let inner: InMemoryDataSource
    let identity: String
    init(_ data: Data, identity: String) {
        inner = InMemoryDataSource(data: data)
        self.identity = identity
    }
    var state: BlobDataSourceState { inner.state }
    var length: Int64? { inner.length }
    var offsetCapability: BlobOffsetCapability { inner.offsetCapability }
    func open() { inner.open() }
    /// Bytes handed to the archive reader so far.
    private(set) var bytesRead = 0
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let n = inner.read(buffer, maxLength: maxLength)
        if n > 0 { bytesRead += n }
        return n
    }
    func property(forKey key: Stream.PropertyKey) -> Any? {
        key == .blobContentIdentityKey ? identity : inner.property(forKey: key)
    }
    func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        inner.setProperty(property, forKey: key)
    }
    func close() { inner.close() }
}

@Suite("Lent blocks and remembered tar headers")
struct LendingAndIndexTests {
    @Test("getBuffer lends every member's bytes, mixed with reads, as bsdtar gives them", arguments: FormatTests.labels)
    func lending(label: String) throws {
        let fixtures = try ArchiveFixtures.get()
        guard let path = fixtures.archives[label] else { return } // recorded by formatsAvailable
        var lentTotal = 0
        for (name, bytes) in fixtures.expectedFiles(label) {
            let (result, lent) = drainLending(ArchiveMemberDataSource(archive: path, member: name))
            #expect(result.last == 0, "\(label) \(name): \(String(describing: result.error))")
            #expect(
                sha256(result.data) == sha256(bytes),
                "\(label) \(name): \(result.data.count) bytes instead of \(bytes.count)")
            lentTotal += lent
        }
        if label == "zip" {
            // Its members are deflated: found through the central directory, they are inflated
            // by BlobStream straight into the reader's buffer, so there is nothing to lend
            // (stored.zip's members are lent).
            #expect(lentTotal == 0, "\(label): \(lentTotal) bytes lent")
        } else {
            #expect(lentTotal > 0, "\(label): nothing was lent")
        }
    }

    @Test("a sparse member read through getBuffer has its holes as zeros")
    func sparseLending() throws {
        let dir = try makeTemporaryDirectory("sparse-lend")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/sparse.img"
        try run("truncate", ["-s", "2000000", file])
        try run(
            "sh", ["-c", "printf 'data in the middle' | dd of='\(file)' bs=1 seek=700000 conv=notrunc status=none"])
        try run("tar", ["--format=pax", "--sparse", "-cf", dir + "/s.tar", "-C", dir, "sparse.img"])
        let reference = try run("tar", ["-xOf", dir + "/s.tar", "sparse.img"]).output
        let (result, lent) = drainLending(ArchiveMemberDataSource(archive: dir + "/s.tar", member: "sparse.img"))
        #expect(
            result.last == 0 && result.data == reference,
            "\(result.data.count) bytes, \(String(describing: result.error))")
        #expect(lent > 0 && lent < reference.count, "lent \(lent): data blocks are lent, holes are read")
    }

    @Test("through getBuffer, a zip CRC mismatch and a truncated tar are errors, never a clean end")
    func lendingErrors() throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("lend-errors")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var zip = try Data(contentsOf: URL(fileURLWithPath: fixtures.archives["stored.zip"]!))
        let range = try #require(zip.range(of: Data("hello, archive".utf8)))
        zip[range.lowerBound] = UInt8(ascii: "J")
        try zip.write(to: URL(fileURLWithPath: dir + "/crc.zip"))
        let (crc, _) = drainLending(ArchiveMemberDataSource(archive: dir + "/crc.zip", member: "a.txt"))
        #expect(crc.last == -1 && crc.error?.code == .corrupt, "\(crc.last) \(String(describing: crc.error))")

        let big = randomBytes(300_000, seed: 7)
        try write(big, to: dir + "/tree/big.bin")
        try run("tar", ["--format=ustar", "-cf", dir + "/t.tar", "-C", dir + "/tree", "big.bin"])
        let tar = try Data(contentsOf: URL(fileURLWithPath: dir + "/t.tar"))
        try tar.prefix(200_000).write(to: URL(fileURLWithPath: dir + "/cut.tar"))
        let (cut, lent) = drainLending(ArchiveMemberDataSource(archive: dir + "/cut.tar", member: "big.bin"))
        #expect(cut.last == -1 && cut.error?.code == .truncated, "\(cut.last) \(String(describing: cut.error))")
        #expect(lent > 0 && cut.data == big.prefix(cut.data.count), "the bytes lent before the cut are the member's")
    }

    @Test("members of one tar read in any order, duplicates first, through remembered headers")
    func rememberedHeaders() throws {
        let dir = try makeTemporaryDirectory("index")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var files: [String: Data] = [:]
        for i in 0..<300 {
            let name = String(format: "d%02d/f%03d.bin", i % 7, i)
            files[name] = randomBytes(1 + (i * 7_919) % 40_000, seed: UInt64(i))
            try write(files[name]!, to: dir + "/tree/" + name)
        }
        let names = files.keys.sorted()
        try run("tar", ["--format=pax", "-cf", dir + "/a.tar", "-C", dir + "/tree"] + names)
        // A second entry named like an early one, appended: the first one is what a name reads.
        let first = names[3]
        try write(Data("a later copy\n".utf8), to: dir + "/tree/" + first)
        try run("tar", ["--format=pax", "-rf", dir + "/a.tar", "-C", dir + "/tree", first])
        let path = dir + "/a.tar"
        var order = names
        order.swapAt(0, order.count - 1) // the last member first: every header is remembered
        order.swapAt(1, 150)
        for name in order + ["missing.bin"] + order.reversed() {
            let result = drain(ArchiveMemberDataSource(archive: FileDataSource(path: path), member: name), size: 8_191)
            if name == "missing.bin" {
                #expect(result.last == -1 && result.error?.code == .notFound, "\(String(describing: result.error))")
            } else {
                #expect(
                    result.last == 0 && result.data == files[name],
                    "\(name): \(result.data.count) bytes, \(String(describing: result.error))")
            }
        }
        // The archive rewritten in place with other bytes: a new archive, read correctly.
        for name in names { try write(Data(name.utf8), to: dir + "/tree/" + name) }
        try run("tar", ["--format=pax", "-cf", path, "-C", dir + "/tree"] + names.reversed())
        for name in [names[0], names[200], names[299]] {
            let result = drain(ArchiveMemberDataSource(archive: path, member: name))
            #expect(
                result.last == 0 && result.data == Data(name.utf8),
                "\(name) after the rewrite: \(String(describing: result.error))")
        }
    }

    @Test("a second member of the same tar is found without reading the headers before it again")
    func rememberedHeadersSaveReads() throws {
        let dir = try makeTemporaryDirectory("saved")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let names = (0..<2_000).map { String(format: "small/%04d.bin", $0) } + ["big/a.bin", "big/b.bin"]
        for name in names {
            try write(randomBytes(name.hasPrefix("big") ? 100_000 : 2_003, seed: 9), to: dir + "/tree/" + name)
        }
        try run("tar", ["--format=ustar", "-cf", dir + "/s.tar", "-C", dir + "/tree"] + names)
        let tar = try Data(contentsOf: URL(fileURLWithPath: dir + "/s.tar"))
        let identity = "test:\(UUID())"
        var reads: [Int] = []
        for name in ["big/a.bin", "big/b.bin"] {
            let upstream = IdentifiedBytes(tar, identity: identity)
            let r = drain(ArchiveMemberDataSource(archive: upstream, member: name))
            #expect(r.last == 0 && r.data == randomBytes(100_000, seed: 9), "\(name): \(String(describing: r.error))")
            reads.append(upstream.bytesRead)
        }
        // The first search reads a few KiB for each of the 2,000 headers before a.bin; the
        // second resumes at a.bin's header and skips its body.
        #expect(reads[0] > 2_000 * 512, "\(reads)")
        #expect(reads[1] < reads[0] / 10, "the second search read \(reads[1]) bytes, the first \(reads[0])")
    }

    @Test("a remembered position that no longer holds the member is noticed, and the search starts over")
    func staleIndex() throws {
        let dir = try makeTemporaryDirectory("stale")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func makeTar(_ label: String, _ names: [String]) throws -> Data {
            for name in names {
                try write(Data((label + name).utf8) + randomBytes(5_000, seed: 1), to: dir + "/\(label)/" + name)
            }
            try run("tar", ["--format=ustar", "-cf", dir + "/\(label).tar", "-C", dir + "/\(label)"] + names)
            return try Data(contentsOf: URL(fileURLWithPath: dir + "/\(label).tar"))
        }
        let names = (0..<40).map { "m\($0).bin" }
        let one = try makeTar("one", names)
        let two = try makeTar("two", names.reversed())
        let identity = "test:\(UUID())"
        // Remember `one`'s layout, then hand out `two`'s bytes under the same identity.
        for name in [names[39], names[20], names[5]] {
            let r = drain(ArchiveMemberDataSource(archive: IdentifiedBytes(one, identity: identity), member: name))
            #expect(
                r.last == 0 && r.data.starts(with: Data(("one" + name).utf8)), "\(name): \(String(describing: r.error))"
            )
        }
        for name in [names[5], names[20], names[39], names[0]] {
            let r = drain(ArchiveMemberDataSource(archive: IdentifiedBytes(two, identity: identity), member: name))
            #expect(
                r.last == 0 && r.data.starts(with: Data(("two" + name).utf8)), "\(name): \(String(describing: r.error))"
            )
        }
    }
}
