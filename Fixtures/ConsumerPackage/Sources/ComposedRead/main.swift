// Reads through the composition root alone, as a package that wants every source does: one
// `BlobSources` registry, no scheme registered here.
//
// `ComposedRead FIXTURES`: a gzip file at an offset (through its index beside it when one
// matches) and a member of a tar.gz, each compared with the bytes it must give.
//
// `ComposedRead cat [--offset N] [--length M] URL`: the bytes of any URL the library reads,
// remote ones included (`StoreSchemes`: http, https and s3 over the process's shared pool,
// the store and its credentials found as awscli finds them), to stdout, with the calls
// `blobstream cat` makes. A test compares its requests with the tool's.
import BlobStream
import BlobStreamS3
import BlobStreamSources
import Foundation

/// Writes `message` and the usage to stderr, exits with 2.
func usage(_ message: String) -> Never {
    FileHandle.standardError.write(
        Data(
            "ComposedRead: \(message)\nusage: ComposedRead FIXTURES | ComposedRead cat [--offset N] [--length M] URL\n"
                .utf8))
    exit(2)
}

/// Reads `url` from `offset`, `length` bytes (nil: to its clean end), handing each piece to
/// `deliver`: seek, open, a lent buffer when the source has one, else a read; after a read
/// of a given length, on to the source's next check point (as `blobstream cat --length`).
func read(
    _ url: String, registry: DataSourceRegistry, offset: Int64 = 0, length: Int64? = nil,
    deliver: (UnsafeRawBufferPointer) throws -> Void
) throws {
    let stream = try BlobInputStream(url: url, registry: registry, mode: .synchronous)
    if offset > 0 { try stream.seek(to: offset) }
    stream.open()
    defer { stream.close() }
    var buffer = [UInt8](repeating: 0, count: 128 << 10)
    var lent: UnsafeMutablePointer<UInt8>?
    var lentCount = 0
    var done: Int64 = 0
    while done < length ?? Int64.max {
        let left = Int(min((length ?? Int64.max) - done, Int64(Int.max)))
        if stream.getBuffer(&lent, length: &lentCount), let lent {
            let n = min(lentCount, left)
            try deliver(UnsafeRawBufferPointer(start: lent, count: n))
            // Lent bytes are consumed: the next call moves on.
            done += Int64(n)
            continue
        }
        let n = stream.read(&buffer, maxLength: min(buffer.count, left))
        if n == 0, length == nil { return }
        if n <= 0 {
            throw stream.streamError ?? BlobStreamError(.truncated, "\(url): ended at offset \(offset + done)")
        }
        try buffer.withUnsafeBytes { try deliver(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        done += Int64(n)
    }
    if length != nil { try stream.readOnToCheckPoint() }
}

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "cat" {
    var offset: Int64 = 0
    var length: Int64?
    var url: String?
    var arguments = CommandLine.arguments.dropFirst(2).makeIterator()
    while let argument = arguments.next() {
        switch argument {
        case "--offset", "--length":
            guard let value = arguments.next().flatMap({ Int64($0) }), value >= 0 else {
                usage("\(argument) needs a number of bytes")
            }
            if argument == "--offset" { offset = value } else { length = value }
        default:
            guard url == nil else { usage("one URL only: '\(argument)'") }
            url = argument
        }
    }
    guard let url else { usage("no URL") }
    let registry = BlobSources(remote: StoreSchemes()).makeRegistry()
    do {
        try read(url, registry: registry, offset: offset, length: length) { bytes in
            FileHandle.standardOutput.write(Data(bytes))
        }
    } catch {
        FileHandle.standardError.write(Data("ComposedRead: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

let fixtures = URL(fileURLWithPath: CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "../")
let registry = BlobSources().makeRegistry()

/// The bytes of `url` from `offset` to its end.
func bytes(of url: String, from offset: Int64 = 0) throws -> Data {
    var data = Data()
    try read(url, registry: registry, offset: offset) { data.append(contentsOf: $0) }
    return data
}

let file = { (path: String) in fixtures.appendingPathComponent(path).absoluteString }
let text = try Data(contentsOf: fixtures.appendingPathComponent("files/sample.txt"))
let photo = try Data(contentsOf: fixtures.appendingPathComponent("files/photo.jpg"))
let reads: [(name: String, got: Data, expected: Data)] = [
    (
        "gzip:…/sample.txt.gz at 5000", try bytes(of: "gzip:" + file("archives/sample.txt.gz"), from: 5000),
        text.dropFirst(5000)
    ),
    (
        "archive:…/photos.tar.gz!/DCIM/100TEST/IMG_0001.JPG",
        try bytes(of: "archive:" + file("archives/photos.tar.gz") + "!/DCIM/100TEST/IMG_0001.JPG"), photo
    ),
]
var failed = false
for read in reads {
    let same = read.got == read.expected
    print("\(read.name): \(read.got.count) bytes, \(same ? "identical to" : "DIFFERENT from") the fixture")
    failed = failed || !same
}
exit(failed ? 1 : 0)
