import BlobStreamCompression
import Foundation
import Testing

@Suite("RawDeflateDecoder: raw deflate (zlib and ISA-L)")
struct RawDeflateTests {
    @Test(
        "the raw-deflate decoder inflates a gzip member's deflate data to its end",
        arguments: InflateEngine.allCases.filter(\.isAvailable))
    func rawDeflate(engine: InflateEngine) throws {
        let truth = textBytes(50_000, seed: 52)
        let gz = try Gzip.compress(truth) // `gzip -n`: a 10-byte header, 8-byte trailer
        let deflate = gz.subdata(in: 10..<(gz.count - 8))
        let decoder = try RawDeflateDecoder(engine: engine, name: "raw")
        var output = [UInt8](repeating: 0, count: truth.count + 16)
        let step = deflate.withUnsafeBytes { input in
            output.withUnsafeMutableBufferPointer { out in
                decoder.inflate(input, into: out.baseAddress!, capacity: out.count)
            }
        }
        #expect(step.ended && step.failure == nil, "raw deflate did not end: \(String(describing: step.failure))")
        #expect(step.consumed == deflate.count)
        #expect(Data(output.prefix(step.produced)) == truth)
        // The gzip format refuses the same bytes (no header).
        let gzipInflater = try ZlibMemberInflater()
        let refused = deflate.withUnsafeBytes { input in
            output.withUnsafeMutableBufferPointer { out in
                gzipInflater.inflate(
                    input.baseAddress!, count: input.count, into: out.baseAddress!, capacity: out.count)
            }
        }
        guard case .failed(let failure) = refused.result else {
            Issue.record("the gzip format took raw deflate data: \(refused.result)")
            return
        }
        #expect(failure.message == "incorrect header check")
    }
}
