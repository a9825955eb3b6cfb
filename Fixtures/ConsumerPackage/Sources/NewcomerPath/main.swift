// The newcomer's path through the documentation, in a package of its own: each step is the
// code of an article (BlobStream.docc, BlobStreamArchive.docc, BlobStreamUpload.docc).
//
//   NewcomerPath FIXTURES UPLOAD_URL
//
// 1. registers a source of its own (`counting:N`) and checks it against the contract;
// 2. streams a photo out of a tar.gz, both as an InputStream and as an AsyncSequence;
// 3. uploads that photo to UPLOAD_URL (an HTTP server taking PUT) and prints what it sent.
// The script that runs it compares the server's copy with the member `bsdtar` extracts.
import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamNetworking
import BlobStreamTestSupport
import Foundation

// MARK: 1. A source of your own ("Registering a data source of your own")

/// The bytes 0, 1, 2, … 255, 0, 1, … : `count` of them.
final class CountingSource: BlobDataSource {
    let state = BlobDataSourceState()
    private let count: Int
    private var position = 0

    init(count: Int) { self.count = count }

    var length: Int64? { Int64(count) }

    func open() {
        state.isOpenCompleted = true
        if count == 0 { state.isAtEnd = true } else { state.hasBytesAvailable = true }
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let n = min(maxLength, count - position)
        for i in 0..<n { buffer[i] = UInt8(truncatingIfNeeded: position + i) }
        position += n
        if position == count { state.isAtEnd = true }
        return n
    }

    func close() {}
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("NewcomerPath: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else { fail("usage: NewcomerPath FIXTURES UPLOAD_URL") }
let fixtures = URL(fileURLWithPath: arguments[1])
let uploadURL = arguments[2]

let registry = DataSourceRegistry()
FileSources.register(in: registry)
GzipSources.register(in: registry)
ArchiveSources.register(in: registry)
registry.register(scheme: "counting") { url, _ in
    guard let count = Int(BlobURL.removingScheme(url)), count >= 0 else {
        throw BlobStreamError(.malformedURL, "\(url): expected counting:<number of bytes>")
    }
    return CountingSource(count: count)
}

let pattern = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
do {
    try SourceConformance.verify(expected: pattern) { CountingSource(count: 100_000) }
} catch {
    fail("CountingSource breaks the contract: \(error)")
}

/// Every byte of `stream`, read the way an `InputStream` is read.
func readAll(_ stream: InputStream) throws -> Data {
    stream.open()
    defer { stream.close() }
    var bytes = Data()
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let n = stream.read(&buffer, maxLength: buffer.count)
        if n < 0 { throw stream.streamError! }
        if n == 0 { return bytes }
        bytes.append(buffer, count: n)
    }
}

let counted = try readAll(try BlobInputStream(url: "counting:100000", registry: registry))
guard counted == pattern else { fail("counting:100000 gave \(counted.count) other bytes") }
print("1. counting:100000: \(counted.count) bytes, as expected; the contract holds")

// MARK: 2. A photo out of a tar.gz ("Streaming a member out of a tar archive")

let archive = fixtures.appendingPathComponent("archives/photos.tar.gz").path
let member = "DCIM/100TEST/IMG_0002.JPG"
let memberURL = "archive:" + BlobURL.fileURL(path: archive) + "!/" + member

let viaStream = try readAll(try BlobInputStream(url: memberURL, registry: registry))

var viaChunks = Data()
for try await chunk in BlobChunks(dataSource: ArchiveMemberDataSource(archive: archive, member: member)) {
    viaChunks.append(chunk)
}
// The README's form: opened with `try await`, read in a `while case` loop.
let opened = try await BlobInputStream.open(url: memberURL, registry: registry)
var viaOpen = Data()
var buffer = [UInt8](repeating: 0, count: 64 * 1024)
while case let n = opened.read(&buffer, maxLength: buffer.count), n > 0 { viaOpen.append(buffer, count: n) }
if let error = opened.streamError { throw error }
opened.close()

guard viaStream == viaChunks, viaStream == viaOpen, !viaStream.isEmpty else {
    fail("\(member): \(viaStream.count) bytes as a stream, \(viaChunks.count) as chunks, \(viaOpen.count) opened")
}
print("2. \(member) out of photos.tar.gz: \(viaStream.count) bytes, the same all three ways")

// MARK: 3. Upload it ("Uploading")

let body = UploadBody(length: nil) { try registry.makeSource(url: memberURL) }
let upload = URLSessionUploader().upload(body, to: uploadURL)
let result = try await upload.result
guard (200..<300).contains(result.statusCode), result.bytesSent == Int64(viaStream.count) else {
    fail("upload to \(uploadURL): status \(result.statusCode) after \(result.bytesSent) bytes")
}
print("3. uploaded to \(uploadURL): status \(result.statusCode), \(result.bytesSent) bytes")
