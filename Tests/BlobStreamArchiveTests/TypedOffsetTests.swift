import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamTestSupport
import Foundation
import Testing

/// The core kit's typed offsets (`readOffset`, `seek(to:)`) on a member, the
/// `.fileCurrentOffsetKey` shim over them, and a member read through the kit's slice source.
@Suite("Typed offsets within a member, and a slice of one")
struct TypedOffsetTests {
    /// Reads `source` (open) to its end in chunks of `chunk` bytes.
    static func readAll(_ source: any BlobDataSource, chunk: Int = 7_000) -> (data: Data, last: Int) {
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let n = source.read(&buffer, maxLength: chunk)
            if n <= 0 { return (out, n) }
            out.append(buffer, count: n)
        }
    }

    /// The error `body` throws; nil when it throws none.
    static func refusal(_ body: () throws -> Void) -> BlobStreamError? {
        do {
            try body()
            return nil
        } catch {
            return error as? BlobStreamError ?? BlobStreamError(.sourceFailed, "not a BlobStreamError: \(error)")
        }
    }

    @Test("seek(to:) and readOffset: before open, forward, backward; the key answers the same")
    func typedOffsets() throws {
        let fixtures = try ArchiveFixtures.get()
        let bytes = fixtures.files["sub/big.bin"]!
        let source = ArchiveMemberDataSource(archive: fixtures.archives["tar.gz"]!, member: "sub/big.bin")
        try source.seek(to: 70_001)
        #expect(source.readOffset == 70_001)
        source.open()
        #expect(source.isOpenCompleted, "\(String(describing: source.error))")
        var buffer = [UInt8](repeating: 0, count: 999)
        #expect(source.read(&buffer, maxLength: 999) == 999)
        #expect(Data(buffer) == bytes.subdata(in: 70_001..<71_000))
        #expect(source.readOffset == 71_000)
        #expect((source.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.int64Value == 71_000)
        try source.seek(to: 200_000)
        #expect(source.read(&buffer, maxLength: 999) == 999)
        #expect(Data(buffer) == bytes.subdata(in: 200_000..<200_999))
        // Backward: the archive is read again from its start.
        try source.seek(to: 5)
        let rest = Self.readAll(source)
        #expect(rest.last == 0, "\(String(describing: source.error))")
        #expect(rest.data == bytes.subdata(in: 5..<bytes.count))
        // Past the end: refused, naming the member, and nothing changes.
        let pastEnd = try #require(Self.refusal { try source.seek(to: Int64(bytes.count) + 1) })
        #expect(pastEnd.code == .invalidOffset && pastEnd.message.contains("sub/big.bin"), "\(pastEnd)")
        #expect(source.readOffset == Int64(bytes.count))
        #expect(source.error == nil)
        // The key, as users of the original set it.
        #expect(source.setProperty(NSNumber(value: 1), forKey: .fileCurrentOffsetKey))
        #expect(source.readOffset == 1)
        #expect(!source.setProperty(NSNumber(value: -1), forKey: .fileCurrentOffsetKey))
        source.close()
        #expect(throws: BlobStreamError.self) { try source.seek(to: 0) }
    }

    @Test("backward over a pipe is refused with .invalidOffset; forward still reads on")
    func backwardOverPipe() throws {
        let fixtures = try ArchiveFixtures.get()
        let data = try Data(contentsOf: URL(fileURLWithPath: fixtures.archives["tar.xz"]!))
        let bytes = fixtures.files["sub/text.txt"]!
        let source = ArchiveMemberDataSource(archive: pipeSource(data), member: "sub/text.txt", name: "piped.tar.xz")
        source.open()
        var buffer = [UInt8](repeating: 0, count: 5_000)
        #expect(source.read(&buffer, maxLength: 5_000) == 5_000)
        try source.seek(to: 150_000)
        #expect(source.read(&buffer, maxLength: 5_000) == 5_000)
        #expect(Data(buffer) == bytes.subdata(in: 150_000..<155_000))
        let backward = try #require(Self.refusal { try source.seek(to: 0) }, "a backward move over a pipe was accepted")
        #expect(backward.code == .invalidOffset, "\(backward)")
        #expect(backward.message.contains("piped.tar.xz") && backward.message.contains("sub/text.txt"), "\(backward)")
        #expect(source.readOffset == 155_000)
        let rest = Self.readAll(source)
        #expect(rest.last == 0 && rest.data == bytes.subdata(in: 155_000..<bytes.count))
        source.close()
    }

    @Test("a slice of a member (the kit's BlobSliceDataSource over the archive source)")
    func sliceOfMember() throws {
        let fixtures = try ArchiveFixtures.get()
        let bytes = fixtures.files["sub/big.bin"]!
        for label in ["pax.tar", "zip", "tar.gz"] {
            let member = ArchiveMemberDataSource(archive: fixtures.archives[label]!, member: "sub/big.bin")
            let slice = BlobSliceDataSource(upstream: member, offset: 100_000, length: 12_345)
            let result = drain(slice)
            #expect(result.last == 0, "\(label): \(String(describing: result.error))")
            #expect(result.data == bytes.subdata(in: 100_000..<112_345), "\(label)")
        }
    }
}
