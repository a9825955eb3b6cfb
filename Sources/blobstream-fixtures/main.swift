// blobstream-fixtures: regenerates the committed test fixtures deterministically.
//
// Usage: blobstream-fixtures FIXTURES_DIR
//
// Writes FIXTURES_DIR/files/* (plain sample files), FIXTURES_DIR/library/ (a sample photo
// library: originals/ and renders/), FIXTURES_DIR/archives/* (a tar, a tar.gz and a .gz made
// from the samples with GNU tar and gzip, with fixed names, times and owners, so the bytes
// are the same for the same tool versions),
// then FIXTURES_DIR/README.md listing every fixture it owns with how it is made and its
// SHA-256 (a test checks the committed files against that list). Run through the package plugin:
// `swift package --allow-writing-to-package-directory generate-fixtures`.
import BlobStreamAssets
import BlobStreamTestSupport
import Crypto
import Foundation
import SampleAssetLibrary

/// Deterministic pseudo-random bytes (the tests' generator).
func pseudoRandom(_ count: Int, seed: UInt64) -> Data { TestData.pseudoRandom(count, seed: seed) }

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
    Fixture(
        path: "files/sample.bin", how: "65,536 pseudo-random bytes (LCG, seed 0xB10B)",
        make: { pseudoRandom(65_536, seed: 0xB10B) }),
    Fixture(path: "files/empty.bin", how: "an empty file", make: { Data() }),
    Fixture(
        path: "files/photo.jpg", how: "a JPEG-like header + 20,000 pseudo-random bytes (seed 0xF070)",
        make: {
            Data([0xFF, 0xD8, 0xFF, 0xE0]) + pseudoRandom(20_000, seed: 0xF070) + Data([0xFF, 0xD9])
        }),
]

/// Runs a tool with a working folder; fails loudly.
func run(_ arguments: [String], in folder: URL, stdout: URL? = nil) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["LC_ALL=C", "TZ=UTC"] + arguments
    process.currentDirectoryURL = folder
    if let stdout {
        FileManager.default.createFile(atPath: stdout.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: stdout)
    }
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw NSError(
            domain: "blobstream-fixtures", code: 1,
            userInfo: [NSLocalizedDescriptionKey: "\(arguments.joined(separator: " ")) failed"])
    }
}

/// The archives: made from a staging tree with GNU tar (ustar, sorted, time 0, owner 0)
/// and gzip -n.
func makeArchives(_ root: URL) throws -> [Fixture] {
    let stage = FileManager.default.temporaryDirectory.appendingPathComponent("fixtures-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: stage) }
    try FileManager.default.createDirectory(
        at: stage.appendingPathComponent("DCIM/100TEST"), withIntermediateDirectories: true)
    try FileManager.default.createDirectory(
        at: stage.appendingPathComponent("notes"), withIntermediateDirectories: true)
    try Data(contentsOf: root.appendingPathComponent("files/photo.jpg")).write(
        to: stage.appendingPathComponent("DCIM/100TEST/IMG_0001.JPG"))
    try pseudoRandom(48_000, seed: 0xA11CE).write(to: stage.appendingPathComponent("DCIM/100TEST/IMG_0002.JPG"))
    try text().write(to: stage.appendingPathComponent("notes/sample.txt"))
    let out = root.appendingPathComponent("archives")
    try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
    try run(
        [
            "tar", "--format=ustar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
            "--mode=u=rwX,go=rX", "-cf", out.appendingPathComponent("photos.tar").path, "DCIM", "notes",
        ], in: stage)
    try run(["gzip", "-n", "-6", "-c", "photos.tar"], in: out, stdout: out.appendingPathComponent("photos.tar.gz"))
    try run(
        ["gzip", "-n", "-6", "-c", root.appendingPathComponent("files/sample.txt").path], in: out,
        stdout: out.appendingPathComponent("sample.txt.gz"))
    let how =
        "GNU tar --format=ustar --sort=name --mtime=@0 --owner=0 --group=0 of DCIM/100TEST/IMG_0001.JPG (= files/photo.jpg), IMG_0002.JPG (48,000 pseudo-random bytes, seed 0xA11CE), notes/sample.txt (= files/sample.txt)"
    return [
        Fixture(
            path: "archives/photos.tar", how: how,
            make: { try Data(contentsOf: out.appendingPathComponent("photos.tar")) }),
        Fixture(
            path: "archives/photos.tar.gz", how: "gzip -n -6 of archives/photos.tar",
            make: { try Data(contentsOf: out.appendingPathComponent("photos.tar.gz")) }),
        Fixture(
            path: "archives/sample.txt.gz", how: "gzip -n -6 of files/sample.txt",
            make: { try Data(contentsOf: out.appendingPathComponent("sample.txt.gz")) }),
    ]
}

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
    // The sample photo library.
    let library = root.appendingPathComponent("library")
    try? FileManager.default.removeItem(at: library)
    try DirectoryAssetLibrary.writeSampleLibrary(at: library)
    for file in DirectoryAssetLibrary.sampleLibraryFiles {
        let hex = SHA256.hash(data: Data(file.bytes)).map { String(format: "%02x", $0) }.joined()
        rows.append(
            "| `library/\(file.path)` | \(file.bytes.count) | \(file.summary) (DirectoryAssetLibrary.writeSampleLibrary) | `\(hex)` |"
        )
        print("wrote library/\(file.path)")
    }
    // Archives made from the samples.
    for fixture in try makeArchives(root) {
        let data = try fixture.make()
        let hex = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        rows.append("| `\(fixture.path)` | \(data.count) | \(fixture.how) | `\(hex)` |")
        print("wrote \(fixture.path) (\(data.count) bytes)")
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
