import Foundation
import Testing

/// zstd's seekable format between BlobStream and the Python readers and writers users have:
/// pyzstd's `SeekableZstdFile` and indexed_zstd (PyPI, in the virtual environment
/// `scripts/zstd-venv` makes).
@Suite("zstd's seekable format: pyzstd and indexed_zstd read ours, we read theirs")
struct ZstdSeekableInteropTests {
    /// Reads `file` at each offset with pyzstd and with indexed_zstd: a line per offset,
    /// `sha256-of-pyzstd's-bytes sha256-of-indexed_zstd's-bytes`.
    static let reader = """
        import hashlib, sys, pyzstd, indexed_zstd
        path, count = sys.argv[1], int(sys.argv[2])
        for offset in map(int, sys.argv[3:]):
            with pyzstd.SeekableZstdFile(path, "r") as f:
                f.seek(offset)
                a = hashlib.sha256(f.read(count)).hexdigest()
            f = indexed_zstd.IndexedZstdFile(path)
            f.seek(offset)
            b = hashlib.sha256(f.read(count)).hexdigest()
            f.close()
            print(a, b)
        """

    /// Writes `source` to `target` with pyzstd's `SeekableZstdFile`, frames of `size` bytes.
    static let writer = """
        import sys, pyzstd
        source, target, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
        with open(source, "rb") as i, pyzstd.SeekableZstdFile(target, "w", max_frame_content_size=size) as o:
            o.write(i.read())
        """

    @Test("compress --seekable's file at 5 offsets in pyzstd and indexed_zstd; pyzstd's in cat --offset and checksum")
    func bothWays() async throws {
        let venv = await BoundedRun.run(
            Tool.repository.appendingPathComponent("scripts/zstd-venv").path, [], limit: 300)
        try #require(venv.status == 0, "scripts/zstd-venv: \(venv.stderrText)")
        let python = String(decoding: venv.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("blobstream-zstdx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let made = try await Tool.shell(
            """
            cd '\(dir.path)' && head -c 2000000 /dev/urandom | base64 > data \
            && "$BLOBSTREAM" compress --seekable --frame-size 100KiB data -o ours.zst
            """)
        try #require(made.status == 0, "\(made.stderr)")
        let data = try Data(contentsOf: dir.appendingPathComponent("data"))
        let count = 5000
        let offsets = [0, 99_999, 1_000_000, data.count - 3000, data.count]

        let read = await BoundedRun.run(
            python,
            ["-c", Self.reader, dir.appendingPathComponent("ours.zst").path, "\(count)"] + offsets.map(String.init),
            limit: 60)
        #expect(read.status == 0, "\(read.stderrText)")
        let expected = offsets.map { offset -> String in
            let slice = Tool.sha256(data[offset..<min(offset + count, data.count)])
            return "\(slice) \(slice)"
        }
        #expect(String(decoding: read.stdout, as: UTF8.self).split(separator: "\n").map(String.init) == expected)

        let written = await BoundedRun.run(
            python,
            [
                "-c", Self.writer, dir.appendingPathComponent("data").path,
                dir.appendingPathComponent("theirs.zst").path,
                "131072",
            ],
            limit: 60)
        try #require(written.status == 0, "\(written.stderrText)")
        for offset in offsets {
            let cat = try await Tool.shell(
                "cd '\(dir.path)' && \"$BLOBSTREAM\" cat --offset \(offset) --length \(count) zstd:theirs.zst | sha256sum"
            )
            #expect(cat.status == 0, "offset \(offset): \(cat.stderr)")
            #expect(cat.text.hasPrefix(Tool.sha256(data[offset..<min(offset + count, data.count)])), "offset \(offset)")
        }
        let whole = try await Tool.blobstream(
            ["checksum", dir.appendingPathComponent("theirs.zst").path].map {
                $0.hasSuffix(".zst") ? "zstd:" + $0 : $0
            })
        #expect(whole.status == 0 && whole.text.hasPrefix(Tool.sha256(data)), "\(whole.stderr)")
    }
}
