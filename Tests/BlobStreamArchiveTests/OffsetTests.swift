import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("Offsets within a member")
struct OffsetTests {
    @Test("offsets before open, forward and backward after open", arguments: ["pax.tar", "tar.gz", "zip", "7z", "iso"])
    func offsets(label: String) throws {
        let fixtures = try ArchiveFixtures.get()
        let path = fixtures.archives[label]!
        let bytes = fixtures.files["sub/big.bin"]!
        let source = ArchiveMemberDataSource(archive: path, member: "sub/big.bin")
        #expect(source.offsetCapability == .readAndDiscard)
        #expect(source.length == nil)
        let stream = BlobInputStream(dataSource: source)
        #expect(stream.setProperty(NSNumber(value: 123_457), forKey: .fileCurrentOffsetKey))
        stream.open()
        #expect(source.length == Int64(bytes.count))
        var buffer = [UInt8](repeating: 0, count: 1000)
        #expect(stream.read(&buffer, maxLength: 1000) == 1000)
        #expect(Data(buffer) == bytes.subdata(in: 123_457..<124_457))
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == 124_457)
        // Forward.
        #expect(stream.setProperty(NSNumber(value: 250_000), forKey: .fileCurrentOffsetKey))
        #expect(stream.read(&buffer, maxLength: 1000) == 1000)
        #expect(Data(buffer) == bytes.subdata(in: 250_000..<251_000))
        // Backward: restarts from the start of the archive.
        #expect(stream.setProperty(NSNumber(value: 10), forKey: .fileCurrentOffsetKey))
        var rest = Data()
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n <= 0 {
                #expect(n == 0, "\(String(describing: stream.streamError))")
                break
            }
            rest.append(buffer, count: n)
        }
        #expect(rest == bytes.subdata(in: 10..<bytes.count))
        // Past the end is refused once the length is known.
        #expect(!stream.setProperty(NSNumber(value: bytes.count + 1), forKey: .fileCurrentOffsetKey))
        #expect(stream.setProperty(NSNumber(value: bytes.count), forKey: .fileCurrentOffsetKey))
        #expect(stream.read(&buffer, maxLength: 10) == 0)
        stream.close()
    }

    @Test("an offset past the end set before open fails the open with .invalidOffset")
    func pastEndBeforeOpen() throws {
        let fixtures = try ArchiveFixtures.get()
        let result = drain(
            ArchiveMemberDataSource(archive: fixtures.archives["pax.tar"]!, member: "a.txt"), offset: 1_000)
        #expect(result.last == -1)
        #expect(result.error?.code == .invalidOffset, "\(String(describing: result.error))")
    }

    @Test("over a pipe: forward works, backward is refused")
    func overPipe() throws {
        let fixtures = try ArchiveFixtures.get()
        let data = try Data(contentsOf: URL(fileURLWithPath: fixtures.archives["tar.xz"]!))
        let bytes = fixtures.files["sub/text.txt"]!
        let stream = BlobInputStream(
            dataSource: ArchiveMemberDataSource(archive: pipeSource(data), member: "sub/text.txt"))
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 5000)
        #expect(stream.read(&buffer, maxLength: 5000) == 5000)
        #expect(stream.setProperty(NSNumber(value: 100_000), forKey: .fileCurrentOffsetKey))
        #expect(stream.read(&buffer, maxLength: 5000) == 5000)
        #expect(Data(buffer) == bytes.subdata(in: 100_000..<105_000))
        #expect(!stream.setProperty(NSNumber(value: 0), forKey: .fileCurrentOffsetKey))
        #expect(stream.read(&buffer, maxLength: 5000) == 5000)
        #expect(Data(buffer) == bytes.subdata(in: 105_000..<110_000))
        stream.close()
    }
}
