// Reads through the composition root alone, as a package that wants every source does: one
// `BlobSources` registry, no scheme registered here. A gzip file at an offset (through its
// index beside it when one matches) and a member of a tar.gz, each compared with the bytes it
// must give.
import BlobStream
import BlobStreamSources
import Foundation

let fixtures = URL(fileURLWithPath: CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "../")
let registry = BlobSources().makeRegistry()

/// The bytes of `url` from `offset` to its end.
func bytes(of url: String, from offset: Int64 = 0) throws -> Data {
    let stream = try BlobInputStream(url: url, registry: registry)
    if offset > 0 { try stream.seek(to: offset) }
    stream.open()
    defer { stream.close() }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = stream.read(&buffer, maxLength: buffer.count)
        if n < 0 { throw stream.streamError ?? BlobStreamError(.closed, "\(url): the stream failed") }
        if n == 0 { return data }
        data.append(buffer, count: n)
    }
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
