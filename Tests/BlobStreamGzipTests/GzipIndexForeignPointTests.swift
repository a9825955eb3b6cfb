import BlobStream
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// rapidgzip (PyPI), in the virtual environment `scripts/rapidgzip-venv` makes.
enum Rapidgzip {
    /// The venv's `rapidgzip` (made when missing).
    static let tool = Result { () throws -> String in
        let output = try IndexedGzip.run(IndexedGzip.scripts.appendingPathComponent("rapidgzip-venv").path, [])
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Exports rapidgzip's index of `gz` (indexed_gzip's GZIDX format, sparse windows: a point
    /// whose following data uses no window carries none), decoding in chunks of `chunkKiB`.
    static func export(_ gz: String, chunkKiB: Int, to index: String, folder: IndexTestFolder) throws {
        _ = try IndexedGzip.run(
            try tool.get(),
            ["--chunk-size", String(chunkKiB), "--export-index", index, "-f", "-o", folder.path("decoded"), gz])
    }
}

/// A foreign index adopted keeps the meaning of every point: a member's start, or a block
/// start that may need no window (rapidgzip leaves such windows out). Reads through the
/// adopted index, on both sides of every point and whole, give the file's bytes.
@Suite("Foreign gzip indexes adopted: every point keeps its meaning")
struct GzipIndexForeignPointTests {
    /// Two members with stored (incompressible) and very compressible stretches: member 1 is
    /// text, random bytes, zeros, text; member 2 random bytes, then text.
    static let input = Result { () throws -> (plain: Data, gz: Data) in
        let first =
            textBytes(3_000_000, seed: 71) + randomBytes(2_500_000, seed: 72) + Data(count: 1_000_000)
            + textBytes(1_500_000, seed: 73)
        let second = randomBytes(1_200_000, seed: 74) + textBytes(2_000_000, seed: 75)
        return (first + second, try Gzip.compress(first) + Gzip.compress(second))
    }

    enum Exporter: String, CaseIterable, CustomStringConvertible {
        case rapidgzip512 = "rapidgzip, 512 KiB chunks"
        case rapidgzip4096 = "rapidgzip, 4 MiB chunks"
        case indexedGzip = "indexed_gzip, 512 KiB spacing"
        var description: String { rawValue }
    }

    /// The exported index of `path`, made by `exporter`.
    static func export(_ path: String, by exporter: Exporter, folder: IndexTestFolder) throws -> String {
        let out = folder.path("theirs.gzidx")
        switch exporter {
        case .rapidgzip512: try Rapidgzip.export(path, chunkKiB: 512, to: out, folder: folder)
        case .rapidgzip4096: try Rapidgzip.export(path, chunkKiB: 4096, to: out, folder: folder)
        case .indexedGzip: _ = try IndexedGzip.helper(["export", path, String(512 << 10), out])
        }
        return out
    }

    @Test("adopted, then read at both sides of every point and whole", arguments: Exporter.allCases)
    func adoptedReadsEverywhere(exporter: Exporter) throws {
        let (plain, gz) = try Self.input.get()
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", gz)
        let exported = try Self.export(path, by: exporter, folder: folder)
        let foreign = try GzipIndex.read(fromPath: exported)
        if exporter != .indexedGzip {
            // What makes this test: points in the middle of a member that carry no window.
            #expect(foreign.points.dropFirst().contains { !$0.hasWindow && $0.uncompressedOffset % 1_000_000 != 0 })
        }
        let adopted = try GzipIndex.adopt(foreign, forFileAtPath: path, name: exported)
        #expect(adopted.hasChunkCRC32s && adopted.identity != nil)
        // Written and read back (the way `index --from … --output` leaves it), then read.
        let sidecar = GzipIndex.sidecar(of: path)
        try adopted.write(toPath: sidecar)
        guard case .matching(let index) = try GzipIndex.lookUp(forFileAtPath: path) else {
            Issue.record("the adopted index written beside the file should be found")
            return
        }
        var wrong: [String] = []
        for point in foreign.points {
            let u = Int(point.uncompressedOffset)
            for start in [u - 1500, u - 1, u, u + 1] where start >= 0 && start < plain.count {
                let count = 3000
                let (bytes, error) = readIndexed(path: path, index: index, at: Int64(start), count: count)
                let expected = plain[start..<min(plain.count, start + count)]
                if error != nil || bytes != expected {
                    wrong.append("offset \(start) (point at \(u)): \(error.map { $0.message } ?? "other bytes")")
                }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.count) reads failed: \(wrong.prefix(5))")
        for parallelism in [1, 2] {
            let (whole, error) = readIndexed(path: path, index: index, at: 0, parallelism: parallelism)
            #expect(error == nil, "whole read on \(parallelism) threads: \(String(describing: error))")
            #expect(sha256(whole) == sha256(plain), "whole read on \(parallelism) threads")
        }
    }
}
