// blobstream-fixtures: regenerates the committed test fixtures deterministically.
//
// Usage: blobstream-fixtures FIXTURES_DIR
//
// Writes FIXTURES_DIR/files/* (plain sample files),
// then FIXTURES_DIR/README.md listing every fixture it owns with how it is made and its
// SHA-256 (a test checks the committed files against that list). Run through the package plugin:
// `swift package --allow-writing-to-package-directory generate-fixtures`.
import Crypto
import Foundation

/// Deterministic pseudo-random bytes (64-bit LCG, fixed seed).
func pseudoRandom(_ count: Int, seed: UInt64) -> Data {
    var state = seed
    var out = [UInt8](repeating: 0, count: count)
    for i in 0..<count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        out[i] = UInt8(truncatingIfNeeded: state >> 33)
    }
    return Data(out)
}

/// A fixture: a relative path, how it is made (for the README), and its bytes.
struct Fixture {
    let path: String
    let how: String
    let make: () throws -> Data
}

func text() -> Data {
    var lines: [String] = []
    for i in 1...200 {
        lines.append("line \(i): BlobStream streams bytes from any source into an InputStream — “ünïcødé” ✓")
    }
    return Data((lines.joined(separator: "\n") + "\n").utf8)
}

let fixtures: [Fixture] = [
    Fixture(path: "files/sample.txt", how: "200 numbered UTF-8 lines (generator: text())", make: text),
    Fixture(path: "files/sample.bin", how: "65,536 pseudo-random bytes (LCG, seed 0xB10B)", make: { pseudoRandom(65_536, seed: 0xB10B) }),
    Fixture(path: "files/empty.bin", how: "an empty file", make: { Data() }),
    Fixture(path: "files/photo.jpg", how: "a JPEG-like header + 20,000 pseudo-random bytes (seed 0xF070)", make: {
        Data([0xFF, 0xD8, 0xFF, 0xE0]) + pseudoRandom(20_000, seed: 0xF070) + Data([0xFF, 0xD9])
    }),
]

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: blobstream-fixtures FIXTURES_DIR\n".utf8))
    exit(2)
}
let root = URL(fileURLWithPath: arguments[1])
var rows: [String] = []
do {
    for fixture in fixtures {
        let url = root.appendingPathComponent(fixture.path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let data = try fixture.make()
        try data.write(to: url)
        let hex = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        rows.append("| `\(fixture.path)` | \(data.count) | \(fixture.how) | `\(hex)` |")
        print("wrote \(fixture.path) (\(data.count) bytes): \(fixture.how)")
    }
    let readme = """
        # Fixtures

        Small committed inputs for the tests and `make demo`. Everything in the table below is
        written by `swift package --allow-writing-to-package-directory generate-fixtures`
        (the `blobstream-fixtures` target) and is byte-identical on every run; a test checks
        each file against its SHA-256 here. Other folders have a README of their own in the
        same form. Large inputs are never committed: tests and `make bench` make them at run
        time.

        | fixture | bytes | how it is made | sha256 |
        | --- | ---: | --- | --- |

        """ + rows.joined(separator: "\n") + "\n"
    try Data(readme.utf8).write(to: root.appendingPathComponent("README.md"))
    print("wrote README.md")
} catch {
    FileHandle.standardError.write(Data("blobstream-fixtures: \(error)\n".utf8))
    exit(1)
}
