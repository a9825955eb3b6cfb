import BlobStream
import BlobStreamArchive
import BlobStreamTestSupport
import Foundation

/// One tree of files written at test time, and the same tree in every format the tests
/// read, made with bsdtar, GNU tar and ar (nothing is committed: see Fixtures/archive/README.md).
struct ArchiveFixtures: Sendable {
    /// The temporary folder.
    let root: String
    /// Regular files of the tree: relative path (no `./`) → bytes.
    let files: [String: Data]
    /// Format label → archive path.
    let archives: [String: String]
    /// Format label → why it could not be made here (recorded, reported by a test).
    let unavailable: [String: String]
    /// Formats that hold only the flat files (ar).
    static let flatFormats: Set<String> = ["ar"]
    static let flatFiles = ["a.txt", "big.bin", "empty.txt"]

    static let longName = String(repeating: "d", count: 60) + "/" + String(repeating: "e", count: 60) + "/long-name.txt"

    /// The tree: small, empty, large random, compressible, Unicode, long and "!" names.
    static let tree: [String: Data] = [
        "a.txt": Data("hello, archive\n".utf8),
        "empty.txt": Data(),
        "sub/big.bin": randomBytes(300_000, seed: 7),
        "sub/text.txt": textBytes(200_000, seed: 8),
        "фото/été.jpg": randomBytes(5_000, seed: 9),
        "bang!name.txt": Data("a name with a bang\n".utf8),
        longName: Data("deep and long\n".utf8),
    ]

    /// Built once per test process.
    static let shared: Result<ArchiveFixtures, TestFailure> = {
        do { return .success(try build()) } catch { return .failure(TestFailure("\(error)")) }
    }()

    static func get() throws -> ArchiveFixtures { try shared.get() }

    private static func build() throws -> ArchiveFixtures {
        let root = try makeTemporaryDirectory("fixtures")
        removeAtExit(root)
        let tree = root + "/tree"
        for (name, data) in Self.tree { try write(data, to: tree + "/" + name) }
        try FileManager.default.createDirectory(atPath: tree + "/emptydir", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: tree + "/link", withDestinationPath: "a.txt")
        let flat = root + "/flat"
        try write(Self.tree["a.txt"]!, to: flat + "/a.txt")
        try write(Self.tree["sub/big.bin"]!, to: flat + "/big.bin")
        try write(Data(), to: flat + "/empty.txt")
        // Fixed times so that the archives do not depend on when the test runs.
        try run("find", [tree, flat, "-exec", "touch", "-h", "-d", "@1700000000", "{}", "+"])

        var archives: [String: String] = [:]
        var unavailable: [String: String] = [:]
        func make(_ label: String, _ tool: String, _ arguments: [String], in directory: String = tree) {
            let path = root + "/fixture." + label
            do {
                try run(tool, arguments.map { $0 == "OUT" ? path : $0 }, in: directory)
                archives[label] = path
            } catch {
                unavailable[label] = "\(error)"
            }
        }
        make("restricted.tar", "bsdtar", ["-cf", "OUT", "."])
        make("ustar.tar", "bsdtar", ["--format", "ustar", "-cf", "OUT", "."])
        make("pax.tar", "bsdtar", ["--format", "pax", "-cf", "OUT", "."])
        make("gnu.tar", "tar", ["--format=gnu", "-cf", "OUT", "."])
        make("gnu-pax.tar", "tar", ["--format=pax", "-cf", "OUT", "."])
        make("tar.gz", "bsdtar", ["-czf", "OUT", "."])
        make("tar.bz2", "bsdtar", ["-cjf", "OUT", "."])
        make("tar.xz", "bsdtar", ["-cJf", "OUT", "."])
        make("tar.zst", "bsdtar", ["--zstd", "-cf", "OUT", "."])
        make("zip", "bsdtar", ["--format", "zip", "-cf", "OUT", "."])
        make("stored.zip", "bsdtar", ["--format", "zip", "--options", "zip:compression=store", "-cf", "OUT", "."])
        make("7z", "bsdtar", ["--format", "7zip", "-cf", "OUT", "."])
        make("cpio", "bsdtar", ["--format", "newc", "-cf", "OUT", "."])
        make("odc.cpio", "bsdtar", ["--format", "odc", "-cf", "OUT", "."])
        make("iso", "bsdtar", ["--format", "iso9660", "-cf", "OUT", "."])
        make("ar", "ar", ["rc", "OUT"] + flatFiles, in: flat)
        // A zip written to a pipe: sizes and CRCs go in data descriptors after the data.
        do {
            let streamed = try run("bsdtar", ["--format", "zip", "-cf", "-", "."], in: tree)
            let path = root + "/fixture.streamed.zip"
            try write(streamed.output, to: path)
            archives["streamed.zip"] = path
        } catch {
            unavailable["streamed.zip"] = "\(error)"
        }
        return ArchiveFixtures(root: root, files: Self.tree, archives: archives, unavailable: unavailable)
    }

    /// The regular files a format holds: relative path → bytes.
    func expectedFiles(_ label: String) -> [String: Data] {
        if Self.flatFormats.contains(label) {
            return ["a.txt": files["a.txt"]!, "big.bin": files["sub/big.bin"]!, "empty.txt": Data()]
        }
        return files
    }
}

/// `name` without a leading `./`.
func stripDotSlash(_ name: String) -> String {
    var name = name
    while name.hasPrefix("./") { name.removeFirst(2) }
    return name
}
