import BlobStream
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// indexed_gzip (PyPI), in the virtual environment `scripts/indexed-gzip-venv` makes.
enum IndexedGzip {
    static let scripts = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts")

    /// Runs a program; its standard output, or a failure with its standard error.
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let folder = try IndexTestFolder()
        let out = folder.path("out")
        let err = folder.path("err")
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: err, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle(forWritingAtPath: out)
        process.standardError = FileHandle(forWritingAtPath: err)
        try process.run()
        process.waitUntilExit()
        let stdout = try String(contentsOfFile: out, encoding: .utf8)
        guard process.terminationStatus == 0 else {
            let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
            throw TestFailure("\(executable) \(arguments.joined(separator: " ")) failed: \(stderr)")
        }
        return stdout
    }

    /// The venv's python (made, with indexed_gzip, when missing).
    static let python = Result { () throws -> String in
        let output = try run(scripts.appendingPathComponent("indexed-gzip-venv").path, [])
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func helper(_ arguments: [String]) throws -> String {
        try run(try python.get(), [scripts.appendingPathComponent("indexed-gzip-interop.py").path] + arguments)
    }
}

@Suite("Gzip index with indexed_gzip") struct GzipIndexInteropTests {
    let input: MultiMember
    let ranges: [(Int, Int)]

    init() throws {
        input = try MultiMember.shared.get()
        let total = input.plain.count
        ranges = [
            (0, 1000), (1_234_567, 200_000), (input.plainStarts[1], 5000), (input.plainStarts[2] - 10, 100),
            (5_000_000, 300_000), (total - 1000, 1000),
        ]
    }

    @Test("our index file: indexed_gzip imports it and reads the same bytes")
    func oursReadByIndexedGzip() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let index = try GzipIndex.build(fileAtPath: path, spacing: 512 << 10)
        let sidecar = GzipIndex.sidecar(of: path)
        try index.write(toPath: sidecar)
        let output = try IndexedGzip.helper(["read", path, sidecar] + ranges.map { "\($0.0):\($0.1)" })
        let theirs = output.split(separator: "\n").map(String.init)
        let ours = ranges.map { sha256(input.plain[$0.0..<min(input.plain.count, $0.0 + $0.1)]) }
        #expect(theirs == ours)
    }

    @Test("indexed_gzip's index file: we read it (named) and deliver the same bytes")
    func theirsReadByUs() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let exported = folder.path("theirs.gzidx")
        _ = try IndexedGzip.helper(["export", path, String(512 << 10), exported])
        guard case .matching(let index) = try GzipIndex.lookUp(forFileAtPath: path, indexPath: exported) else {
            Issue.record("a named foreign index should be used")
            return
        }
        #expect(index.identity == nil)
        #expect(index.points.count > 6)
        #expect(index.uncompressedSize == Int64(input.plain.count))
        // Refused as it is: nothing could check a read through it.
        let (none, refusal) = readIndexed(path: path, index: index, at: 1000, count: 10)
        #expect(none.isEmpty && refusal?.message.contains("no chunk CRC-32s") == true, "\(String(describing: refusal))")
        for (offset, count) in ranges {
            let (bytes, error) = readIndexed(
                path: path, index: index, at: Int64(offset), count: count, acceptsUncheckedIndex: true)
            #expect(error == nil, "offset \(offset): \(String(describing: error))")
            #expect(sha256(bytes) == sha256(input.plain[offset..<min(input.plain.count, offset + count)]))
        }
        // Not used when found beside the file without being named.
        try FileManager.default.copyItem(atPath: exported, toPath: GzipIndex.sidecar(of: path))
        guard case .unusable = try GzipIndex.lookUp(forFileAtPath: path) else {
            Issue.record("a foreign sidecar must not be used implicitly")
            return
        }
    }

    @Test("indexed_gzip's index adopted: checked against the file, then reads through it are checked")
    func adoptTheirs() throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let exported = folder.path("theirs.gzidx")
        _ = try IndexedGzip.helper(["export", path, String(512 << 10), exported])
        let foreign = try GzipIndex.read(fromPath: exported)
        let adopted = try GzipIndex.adopt(foreign, forFileAtPath: path, name: exported)
        #expect(adopted.hasChunkCRC32s && adopted.identity != nil)
        #expect(adopted.points.map(\.uncompressedOffset) == foreign.points.map(\.uncompressedOffset))
        for (offset, count) in ranges {
            let (bytes, error) = readIndexed(path: path, index: adopted, at: Int64(offset), count: count)
            #expect(error == nil, "offset \(offset): \(String(describing: error))")
            #expect(sha256(bytes) == sha256(input.plain[offset..<min(input.plain.count, offset + count)]))
        }
        // Written and read back, it is an index of BlobStream's own: found beside the file.
        try adopted.write(toPath: GzipIndex.sidecar(of: path))
        guard case .matching(let found) = try GzipIndex.lookUp(forFileAtPath: path) else {
            Issue.record("an adopted index written beside the file should be found")
            return
        }
        #expect(found.hasChunkCRC32s)
    }

    @Test(
        "a foreign index with a wrong seek point is refused at adoption, naming the point",
        arguments: ["compressed offset", "bit offset", "window", "uncompressed offset", "size"])
    func adoptRefusesWrongPoints(what: String) throws {
        let folder = try IndexTestFolder()
        let path = try folder.write("m.gz", input.gz)
        let exported = folder.path("theirs.gzidx")
        _ = try IndexedGzip.helper(["export", path, String(512 << 10), exported])
        var index = try GzipIndex.read(fromPath: exported)
        // A point inside the first member (text), with a window.
        guard let k = index.points.indices.first(where: { index.points[$0].hasWindow && $0 >= 2 }) else {
            Issue.record("the exported index has no point with a window")
            return
        }
        switch what {
        case "compressed offset": index.points[k].compressedOffset += 1
        case "bit offset": index.points[k].bitOffset = (index.points[k].bitOffset + 3) % 8
        case "window":
            var window = try index.points[k].loadWindow() ?? []
            for i in stride(from: window.count - 4096, to: window.count, by: 7) { window[i] ^= 0x20 }
            index.points[k].window = window
        case "uncompressed offset": index.points[k].uncompressedOffset += 1
        default: index.uncompressedSize += 1
        }
        #expect(throws: BlobStreamError.self) { try GzipIndex.adopt(index, forFileAtPath: path, name: exported) }
        do {
            _ = try GzipIndex.adopt(index, forFileAtPath: path, name: exported)
        } catch {
            #expect(error.code == .changed && error.message.contains(exported) && error.message.contains(path))
        }
    }
}
