import BlobStream
import Foundation
import NIOHTTP1
import Testing

@testable import BlobStreamS3

/// What a `HEAD` with `x-amz-checksum-mode: ENABLED` tells a whole read (or a copy in parts)
/// to check against, from synthetic answers; and the parts' CRCs combined into the object's.
@Suite("The checksum a store keeps, as a HEAD gives it")
struct S3KeptChecksumTests {
    static func kept(_ headers: [(String, String)], etag: String? = "\"e1\"") -> Result<
        (algorithm: S3ChecksumAlgorithm, value: String), S3WholeObjectCheck.Unchecked
    > {
        S3WholeObjectCheck.fullObjectChecksum(
            status: .ok, headers: HTTPHeaders([("ETag", "\"e1\"")] + headers), etag: etag)
    }

    @Test("a FULL_OBJECT CRC (CRC-64/NVME, CRC-32, CRC-32C) is checked against; a type-less one too")
    func crcs() throws {
        for (algorithm, value) in [("crc64nvme", "rosUhgp5mIg="), ("crc32", "y/Q5Jg=="), ("crc32c", "4waSgw==")] {
            let answer = try Self.kept([("x-amz-checksum-\(algorithm)", value), ("x-amz-checksum-type", "FULL_OBJECT")])
                .get()
            #expect(answer.algorithm == S3ChecksumAlgorithm(name: algorithm) && answer.value == value)
            #expect(try Self.kept([("x-amz-checksum-\(algorithm)", value)]).get().value == value)
        }
    }

    @Test(
        "a SHA-256 or SHA-1 of the whole object is not called COMPOSITE: the read checks only CRCs, and says so",
        arguments: [
            ("sha256", "FULL_OBJECT", "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg="),
            ("sha256", "", "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg="),
            ("sha1", "FULL_OBJECT", "qvTGHdzF6KLavt4PO0gs2a6pQ00="),
        ])
    func wholeSHA(algorithm: String, type: String, value: String) {
        var headers = [("x-amz-checksum-\(algorithm)", value)]
        if !type.isEmpty { headers.append(("x-amz-checksum-type", type)) }
        guard case .failure(let why) = Self.kept(headers) else {
            Issue.record("a \(algorithm) taken as a CRC to check against")
            return
        }
        #expect(
            why.reason
                == "the store keeps a \(algorithm.uppercased()) of the whole object (\(value)), and a read is checked only against a CRC-64/NVME, CRC-32 or CRC-32C"
        )
        #expect(!why.reason.contains("COMPOSITE"))
    }

    @Test("a COMPOSITE checksum (by its type or its -N), none, another ETag, a failed HEAD: unchecked, saying why")
    func unchecked() {
        let cases: [([(String, String)], String)] = [
            (
                [("x-amz-checksum-sha256", "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=-3")],
                "the store keeps a COMPOSITE SHA256"
            ),
            (
                [
                    ("x-amz-checksum-sha256", "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg="),
                    ("x-amz-checksum-type", "COMPOSITE"),
                ],
                "the store keeps a COMPOSITE SHA256"
            ),
            (
                [("x-amz-checksum-crc32c", "4waSgw==-2"), ("x-amz-checksum-type", "COMPOSITE")],
                "the store keeps a COMPOSITE CRC32C"
            ),
            ([], "the store keeps no checksum of the object"),
        ]
        for (headers, reason) in cases {
            guard case .failure(let why) = Self.kept(headers) else {
                Issue.record("\(headers): checked")
                continue
            }
            #expect(why.reason.hasPrefix(reason), "\(why.reason)")
        }
        guard case .failure(let changed) = Self.kept([("x-amz-checksum-crc32", "y/Q5Jg==")], etag: "\"e0\"") else {
            Issue.record("another ETag: checked")
            return
        }
        #expect(changed.reason.hasPrefix("the object changed after it was read"))
        let failed = S3WholeObjectCheck.fullObjectChecksum(
            .success(.init(host: "s", status: .forbidden, version: .http1_1, headers: [:], body: nil)), etag: nil)
        guard case .failure(let refused) = failed else {
            Issue.record("a 403 HEAD: checked")
            return
        }
        #expect(refused.reason == "the HEAD that asks for the store's checksum was answered 403")
    }

    @Test("parts' CRCs combined in order are the whole object's, for CRC-64/NVME, CRC-32 and CRC-32C")
    func combined() throws {
        let data = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 7) })
        for algorithm in [S3ChecksumAlgorithm.crc64nvme, .crc32, .crc32c] {
            var whole = S3Checksum(algorithm)
            whole.update(data)
            let parts = [0..<1, 1..<40_000, 40_000..<40_000, 40_000..<100_000].map { range in
                var part = S3Checksum(algorithm)
                part.update(data[range])
                return part
            }
            let combined = try #require(S3Checksum.combined(parts))
            #expect(combined.base64 == whole.base64 && combined.count == Int64(data.count), "\(algorithm)")
            var flipped = data
            flipped[70_000] ^= 0x01
            var other = S3Checksum(algorithm)
            other.update(flipped[40_000...])
            #expect(S3Checksum.combined(Array(parts.dropLast()) + [other])?.base64 != whole.base64, "\(algorithm)")
        }
        #expect(S3Checksum.combined([S3Checksum(.sha256)]) == nil)
        #expect(S3Checksum.combined([S3Checksum(.crc32), S3Checksum(.crc32c)]) == nil)
    }
}
