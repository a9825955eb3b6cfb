import BlobStreamChecksums
import BlobStreamCompression
import BlobStreamS3
import Foundation
import Testing

/// The CRCs S3 stores, against the CRC catalogue's check values and AWS's published ones
/// (aws-crt-swift's and aws-c-s3's checksum tests), and the S3 framing: big-endian, base64.
@Suite("S3 checksums: CRC-32C, CRC-64/NVME, the framing S3 shows")
struct S3ChecksumTests {
    static let check = Array("123456789".utf8)

    @Test("the catalogue's check values: CRC-32C e3069283, CRC-64/NVME ae8b14860a799888")
    func catalogue() {
        #expect(CRC32C.update(0, Self.check) == 0xE306_9283)
        #expect(CRC64NVME.update(0, Self.check) == 0xAE8B_1486_0A79_9888)
        #expect(CRC32.update(0, Self.check) == 0xCBF4_3926)
    }

    @Test(
        "CRC-32 in Swift (S3's) equals zlib's (the codecs') at every length and alignment, and combines as zlib's",
        arguments: [0, 1, 7, 8, 15, 16, 17, 1000, 4095, 4096, 4097, 4150, 65_537])
    func crc32MatchesZlib(count: Int) {
        let bytes = (0..<count + 3).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 3) }
        for start in 0..<3 {
            let slice = Array(bytes[start..<start + count])
            #expect(CRC32.update(0, slice) == ZlibCRC32.update(0, slice), "\(count) bytes from \(start)")
        }
        let cut = count / 3
        let (head, tail) = (Array(bytes[..<cut]), Array(bytes[cut...]))
        #expect(
            CRC32.combine(CRC32.update(0, head), CRC32.update(0, tail), tail.count)
                == ZlibCRC32.combine(ZlibCRC32.update(0, head), ZlibCRC32.update(0, tail), tail.count))
    }

    @Test("AWS's published values (aws-crt-swift, aws-c-s3)")
    func awsValues() {
        #expect(CRC32C.update(0, []) == 0)
        #expect(CRC32C.update(0, Array("Hello".utf8)) == 2_178_485_787)
        #expect(CRC32C.update(0, Array("{\"foo\":\"base64 encoded sha1 checksum\"}".utf8)) == 3_565_301_023)
        #expect(CRC32.update(0, Array("Hello".utf8)) == 4_157_704_578)
        #expect(CRC64NVME.update(0, []) == 0)
        #expect(CRC64NVME.update(0, [UInt8](repeating: 0, count: 32)) == 0xCF34_7343_4D4E_CF3B)
        #expect(CRC64NVME.update(0, (0..<32).map { UInt8($0) }) == 0xB9D9_D4A8_492C_BD7F)
        #expect(CRC64NVME.update(0, Array("aaaaaaaaaa".utf8)) == 0x0C1A_8003_6D65_C555)
    }

    @Test(
        "any split gives the same CRC, and combine joins two CRCs as the whole's (buffers of three lanes among them)",
        arguments: [0, 1, 7, 8, 9, 4095, 4100, 9000])
    func splitsAndCombine(cut: Int) {
        let bytes = (0..<9001).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 5) }
        let head = Array(bytes[..<cut])
        let tail = Array(bytes[cut...])
        #expect(CRC32C.update(CRC32C.update(0, head), tail) == CRC32C.update(0, bytes))
        #expect(CRC64NVME.update(CRC64NVME.update(0, head), tail) == CRC64NVME.update(0, bytes))
        #expect(
            CRC32C.combine(CRC32C.update(0, head), CRC32C.update(0, tail), tail.count) == CRC32C.update(0, bytes))
        #expect(
            CRC64NVME.combine(CRC64NVME.update(0, head), CRC64NVME.update(0, tail), tail.count)
                == CRC64NVME.update(0, bytes))
    }

    @Test("S3Checksum: big-endian digests in base64, as S3 shows them")
    func framing() {
        var crc64 = S3Checksum(.crc64nvme)
        crc64.update(Data(Self.check))
        #expect(crc64.hex == "ae8b14860a799888")
        #expect(crc64.base64 == Data([0xAE, 0x8B, 0x14, 0x86, 0x0A, 0x79, 0x98, 0x88]).base64EncodedString())
        var crc32c = S3Checksum(.crc32c)
        crc32c.update(Data(Self.check))
        #expect(crc32c.base64 == "4waSgw==")
        var sha256 = S3Checksum(.sha256)
        sha256.update(Data())
        // The SHA-256 of nothing, e3b0c442…, in base64.
        #expect(sha256.base64 == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
        #expect(S3ChecksumAlgorithm.crc64nvme.headerName == "x-amz-checksum-crc64nvme")
        #expect(S3ChecksumAlgorithm(name: "crc32c") == .crc32c)
    }

    @Test("a multipart object's checksum: full object (CRCs) and composite (-N)")
    func objectChecksums() {
        let parts = [Data(repeating: 1, count: 1000), Data(repeating: 2, count: 333), Data([9])]
        let whole = parts.reduce(Data(), +)
        for algorithm in [S3ChecksumAlgorithm.crc32, .crc32c, .crc64nvme] {
            let checksums = parts.map { part in
                var checksum = S3Checksum(algorithm)
                checksum.update(part)
                return checksum
            }
            var expected = S3Checksum(algorithm)
            expected.update(whole)
            #expect(S3Checksum.object(checksums, type: .fullObject) == expected.base64, "\(algorithm)")
            var composite = S3Checksum(algorithm)
            for checksum in checksums { composite.update(checksum.digest) }
            #expect(S3Checksum.object(checksums, type: .composite) == composite.base64 + "-3")
        }
        var sha = S3Checksum(.sha256)
        sha.update(whole)
        #expect(S3Checksum.object([sha], type: .fullObject) == nil)
    }

    @Test("blobstream checksum -a crc32c|crc64nvme: hex by default, --base64 as S3 shows it")
    func tool() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("crc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("check.txt").path
        try Data(Self.check).write(to: URL(fileURLWithPath: path))
        let environment = ProcessInfo.processInfo.environment
        let crc32c = try await S3ReadToolTests.run(["checksum", "-a", "crc32c", path], environment: environment)
        #expect(String(decoding: crc32c.stdout, as: UTF8.self) == "e3069283  \(path)\n", "\(crc32c.stderr)")
        let crc64 = try await S3ReadToolTests.run(["checksum", "-a", "crc64nvme", path], environment: environment)
        #expect(String(decoding: crc64.stdout, as: UTF8.self) == "ae8b14860a799888  \(path)\n")
        let base64 = try await S3ReadToolTests.run(
            ["checksum", "-a", "crc64nvme", "--base64", path], environment: environment)
        #expect(String(decoding: base64.stdout, as: UTF8.self) == "rosUhgp5mIg=  \(path)\n")
        let checked = try await S3ReadToolTests.run(
            ["checksum", "-a", "crc64nvme", "-c", "--base64", path], environment: environment)
        #expect(checked.status == 2)
        #expect(checked.stderr.contains("--base64"))
    }
}
