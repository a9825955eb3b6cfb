import BlobStream
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// A small two-part input: its gzip bytes and the length of the first member.
private func smallMultiMember() throws -> (gz: Data, firstMember: Int) {
    let a = try Gzip.compress(textBytes(700, seed: 10))
    let b = try Gzip.compress(Data("second member\n".utf8))
    return (a + b, a.count)
}

private func expectError(
    _ result: Drained, _ code: BlobStreamError.Code, contains text: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(result.last == -1, "ended with \(result.last), not an error", sourceLocation: sourceLocation)
    #expect(result.error?.code == code, "\(String(describing: result.error))", sourceLocation: sourceLocation)
    if let text {
        #expect(
            result.error?.message.contains(text) == true, "\(String(describing: result.error))",
            sourceLocation: sourceLocation)
    }
}

@Suite("Errors")
struct GzipErrorTests {
    @Test("every truncation of a small gzip file is .truncated, never a clean end")
    func truncationSweep() throws {
        let gz = try Gzip.compress(textBytes(3000, seed: 11))
        for length in 0..<gz.count {
            let result = drainSync(gzipSource(gz.prefix(length), name: "cut.gz"))
            #expect(result.last == -1, "length \(length) of \(gz.count) ended cleanly")
            #expect(result.error?.code == .truncated, "length \(length): \(String(describing: result.error))")
            #expect(result.error?.message.contains("cut.gz") == true)
            #expect(
                result.error?.message.contains("compressed offset \(length)") == true,
                "length \(length): \(result.error?.message ?? "")")
        }
    }

    @Test("every truncation of a multi-member file is .truncated, except at a member boundary")
    func truncationSweepMultiMember() throws {
        let (gz, first) = try smallMultiMember()
        for length in 0..<gz.count {
            // Also with 1-byte upstream reads, to cut zlib's input at every byte.
            let result = drainSync(
                GzipDataSource(
                    upstream: InMemoryDataSource(data: gz.prefix(length), chunkSize: length % 2 == 0 ? .max : 1),
                    name: "cut.gz"))
            if length == first {
                #expect(result.last == 0, "the first member alone is a valid gzip file")
            } else {
                #expect(result.last == -1, "length \(length) of \(gz.count) ended cleanly")
                #expect(result.error?.code == .truncated, "length \(length): \(String(describing: result.error))")
            }
        }
    }

    @Test("an empty input is an error, not an empty result")
    func emptyInput() {
        expectError(drainSync(gzipSource(Data(), name: "empty.gz")), .truncated, contains: "empty.gz")
    }

    @Test("bad magic", arguments: [InflateEngine.zlib, .isal])
    func badMagic(_ engine: InflateEngine) throws {
        var gz = try Gzip.compress(Data("hello".utf8))
        for index in [0, 1] {
            var bad = gz
            bad[index] ^= 0xFF
            let result = drainSync(gzipSource(bad, name: "magic.gz", engine: engine))
            expectError(result, .corrupt, contains: "magic.gz")
            if engine == .zlib {
                #expect((result.error?.cause as? ZlibError)?.message == "incorrect header check")
                #expect((result.error?.cause as? ZlibError)?.code == -3)
            } else {
                #expect((result.error?.cause as? IsalError)?.message == "incorrect header check")
                #expect((result.error?.cause as? IsalError)?.code == -4) // ISAL_INVALID_WRAPPER
            }
        }
        gz[2] = 7 // compression method other than deflate
        expectError(drainSync(gzipSource(gz, engine: engine)), .corrupt, contains: "unknown compression method")
        // Plain text is not gzip.
        expectError(
            drainSync(gzipSource(Data("just text\n".utf8), engine: engine)), .corrupt,
            contains: "incorrect header check")
    }

    @Test("flipped flag bits in the header are an error")
    func badFlags() throws {
        let gz = try Gzip.compress(textBytes(2000, seed: 12))
        for bit in 0..<8 {
            var bad = gz
            bad[3] ^= UInt8(1 << bit)
            let result = drainSync(gzipSource(bad))
            if bit == 0 {
                // FTEXT is only a hint: a flipped FTEXT bit is still a valid file.
                #expect(result.last == 0)
                continue
            }
            #expect(result.last == -1, "flag bit \(bit) flipped: ended cleanly")
            #expect(
                result.error?.code == .corrupt || result.error?.code == .truncated,
                "flag bit \(bit): \(String(describing: result.error))")
        }
    }

    @Test(
        "a bad header CRC (FHCRC) is verified by zlib and by the ISA-L engine: .corrupt",
        arguments: [InflateEngine.zlib, .isal])
    func badHeaderCRC(_ engine: InflateEngine) throws {
        let result = drainSync(
            gzipSource(try fixture("bad-header-crc.gz"), name: "bad-header-crc.gz", engine: engine))
        expectError(result, .corrupt, contains: "bad-header-crc.gz")
        if engine == .zlib {
            #expect((result.error?.cause as? ZlibError)?.message == "header crc mismatch")
        } else {
            #expect((result.error?.cause as? IsalError)?.message == "header crc mismatch")
        }
        // And any single flipped byte of the crafted header (FEXTRA, FNAME, FCOMMENT, FHCRC).
        let good = try fixture("header-fields.gz")
        for index in 4..<62 {
            var bad = good
            bad[index] ^= 0x01
            let r = drainSync(gzipSource(bad, engine: engine))
            #expect(r.last == -1, "header byte \(index) flipped: ended cleanly")
        }
    }

    @Test(
        "a flipped byte in the deflate body, CRC-32 or ISIZE is .corrupt with the offset",
        arguments: [InflateEngine.zlib, .isal])
    func corruptBodyAndTrailer(_ engine: InflateEngine) throws {
        let gz = try Gzip.compress(textBytes(20_000, seed: 13))
        let n = gz.count
        let cases: [(String, Int, String?)] = [
            ("deflate body", n / 2, nil),
            ("CRC-32 low byte", n - 8, "incorrect data check"),
            ("CRC-32 high byte", n - 5, "incorrect data check"),
            ("ISIZE low byte", n - 4, "incorrect length check"),
            ("ISIZE high byte", n - 1, "incorrect length check"),
        ]
        for (what, index, message) in cases {
            var bad = gz
            bad[index] ^= 0x10
            let result = drainSync(gzipSource(bad, name: "flip.gz", engine: engine))
            #expect(result.last == -1, "\(what) flipped: ended cleanly")
            #expect(result.error?.code == .corrupt, "\(what): \(String(describing: result.error))")
            #expect(result.error?.message.contains("flip.gz") == true)
            #expect(result.error?.message.contains("compressed offset") == true)
            if engine == .zlib {
                #expect(result.error?.cause is ZlibError)
                if let message {
                    #expect((result.error?.cause as? ZlibError)?.message == message, "\(what)")
                }
            } else {
                #expect(result.error?.cause is IsalError)
                if let message {
                    #expect((result.error?.cause as? IsalError)?.message == message, "\(what)")
                }
            }
        }
    }

    @Test("every single flipped byte of a small file is an error (or, rarely, equal output)")
    func flipSweep() throws {
        let input = textBytes(400, seed: 14)
        let gz = try Gzip.compress(input)
        for index in 0..<gz.count {
            var bad = gz
            bad[index] ^= 0x80
            let result = drainSync(gzipSource(bad))
            if result.last == 0 {
                // Only bits that carry no information may be flipped without an error:
                // MTIME, XFL, OS, and the padding bits of the last deflate byte.
                #expect((4...9).contains(index) || index == gz.count - 9, "byte \(index) flipped: ended cleanly")
                #expect(result.data == input)
            } else {
                #expect(result.error?.code == .corrupt || result.error?.code == .truncated)
            }
        }
    }

    @Test("trailing zero bytes after the last member are ignored, as gzip -d does")
    func trailingZeros() throws {
        let input = textBytes(5000, seed: 15)
        let gz = try Gzip.compress(input) + Data(count: 512)
        let result = drainSync(gzipSource(gz))
        #expect(result.last == 0, "\(String(describing: result.error))")
        #expect(result.data == input)
        #expect(try Gzip.decompress(gz) == input)
        // Padding read one byte at a time too.
        let small = drainSync(GzipDataSource(upstream: InMemoryDataSource(data: gz, chunkSize: 1)))
        #expect(small.last == 0)
        #expect(small.data == input)
    }

    @Test(
        "trailing garbage after a member is .corrupt, never ignored",
        arguments: [
            Data("garbage".utf8), Data([0x1F]), Data([0x1F, 0x8B]), Data([0, 0, 0, 1]), Data([0xFF]),
        ])
    func trailingGarbage(_ tail: Data) throws {
        let input = textBytes(1000, seed: 16)
        let gz = try Gzip.compress(input) + tail
        let result = drainSync(gzipSource(gz, name: "tail.gz"))
        #expect(result.last == -1, "trailing \(Array(tail)) ignored")
        // A lone 0x1f or 0x1f 0x8b starts a member that then ends: truncated.
        let expected: BlobStreamError.Code = tail.first == 0x1F ? .truncated : .corrupt
        #expect(result.error?.code == expected, "\(String(describing: result.error))")
        #expect(result.error?.message.contains("tail.gz") == true)
    }

    @Test("an upstream error is reported with the upstream's code and error as cause")
    func upstreamFails() throws {
        let gz = try Gzip.compress(textBytes(100_000, seed: 17))
        let failure = BlobStreamError(.ioFailed, "disk on fire")
        let source = GzipDataSource(
            upstream: InMemoryDataSource(data: gz, failAt: (offset: 1000, error: failure), chunkSize: 100),
            name: "fail.gz")
        let result = drainSync(source)
        #expect(result.last == -1)
        #expect(result.error?.code == .ioFailed)
        #expect(result.error?.message.contains("compressed offset 1000") == true, "\(result.error?.message ?? "")")
        #expect((result.error?.cause as? BlobStreamError)?.message == "disk on fire")
        // Failing at open.
        let atOpen = GzipDataSource(upstream: InMemoryDataSource(data: gz, failAtOpen: failure))
        let r2 = drainSync(atOpen)
        #expect(r2.last == -1)
        #expect(r2.error?.code == .ioFailed)
    }

    @Test("errors are sticky")
    func sticky() throws {
        var gz = try Gzip.compress(textBytes(1000, seed: 18))
        gz[gz.count - 6] ^= 1
        let source = gzipSource(gz)
        source.open()
        var buffer = [UInt8](repeating: 0, count: 100_000)
        var n = 1
        while n > 0 { n = source.read(&buffer, maxLength: buffer.count) }
        #expect(n == -1)
        let first = source.error as? BlobStreamError
        #expect(source.read(&buffer, maxLength: 10) == -1)
        #expect((source.error as? BlobStreamError)?.message == first?.message)
        #expect(!source.setProperty(NSNumber(value: 0), forKey: .fileCurrentOffsetKey))
        source.close()
    }
}
