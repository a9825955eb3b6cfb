// blobstream-bench: baseline and probe programs for `make bench`, so that BlobStream is
// compared with Foundation's own streams and URLSession in the same run.
//
//   blobstream-bench foundation-read FILE...          InputStream(fileAtPath:), 64 KiB reads
//   blobstream-bench asset-read ROOT URL SIZE TIMES [unverified]
//                                                    an asset of a DirectoryAssetLibrary read
//                                                    TIMES times through BlobInputStream with
//                                                    SIZE-byte reads; prints getBytes calls;
//                                                    `unverified`: verifiesDeliveredBytes false
//   blobstream-bench stream-read FILE                 a file through BlobInputStream's own read
//                                                    loop, 64 KiB reads; prints the byte count
//   blobstream-bench chunks-read FILE [SIZE]          the same file through source.chunks(),
//                                                    the AsyncSequence, SIZE-byte chunks (64 KiB)
//   (URLSession's uploadTask(fromFile:) is blobstream-bench-urlsession: linking
//   FoundationNetworking here would load libcurl into every asset row's process.)
import BlobStream
import BlobStreamAssets
import BlobStreamFiles
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("blobstream-bench: \(message)\n".utf8))
    exit(1)
}

func foundationRead(_ paths: [String]) -> Int {
    var total = 0
    let size = 64 * 1024
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
    defer { buffer.deallocate() }
    for path in paths {
        guard let stream = InputStream(fileAtPath: path) else { fail("cannot open \(path)") }
        stream.open()
        while true {
            let n = stream.read(buffer, maxLength: size)
            if n < 0 { fail("read error in \(path)") }
            if n == 0 { break }
            total += n
        }
        stream.close()
    }
    return total
}

func assetRead(root: String, url: String, readSize: Int, times: Int, verified: Bool) -> String {
    let library = DirectoryAssetLibrary(root: URL(fileURLWithPath: root))
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: readSize)
    defer { buffer.deallocate() }
    var total = 0
    var getBytes = 0
    for _ in 0..<times {
        let source = AssetDataSource(url: url, library: library, verifiesDeliveredBytes: verified)
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        while true {
            let n = stream.read(buffer, maxLength: readSize)
            if n < 0 { fail("\(url): \(stream.streamError.map { "\($0)" } ?? "read failed")") }
            if n == 0 { break }
            total += n
        }
        getBytes += source.statistics.getBytesCalls
        stream.close()
    }
    return "bytes=\(total) getBytes=\(getBytes)"
}

/// A file through the stream's own `read` loop: the reference for `chunksRead`.
func streamRead(_ path: String) -> Int {
    let size = 64 * 1024
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
    defer { buffer.deallocate() }
    let stream = BlobInputStream(dataSource: FileDataSource(path: path), mode: .synchronous)
    stream.open()
    var total = 0
    while true {
        let n = stream.read(buffer, maxLength: size)
        if n < 0 { fail("\(path): \(stream.streamError.map { "\($0)" } ?? "read failed")") }
        if n == 0 { break }
        total += n
    }
    stream.close()
    return total
}

/// A file through the chunk sequence (`source.chunks(size:)`), as an async caller reads it.
func chunksRead(_ path: String, size: Int) async -> Int {
    var total = 0
    do {
        for try await chunk in FileDataSource(path: path).chunks(size: size) { total += chunk.count }
    } catch {
        fail("\(path): \(error)")
    }
    return total
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "foundation-read":
    print(foundationRead(Array(arguments.dropFirst())))
case "asset-read" where arguments.count == 5 || (arguments.count == 6 && arguments[5] == "unverified"):
    print(
        assetRead(
            root: arguments[1], url: arguments[2], readSize: Int(arguments[3])!, times: Int(arguments[4])!,
            verified: arguments.count == 5))
case "stream-read" where arguments.count == 2:
    print("bytes=\(streamRead(arguments[1]))")
case "chunks-read" where arguments.count == 2 || arguments.count == 3:
    print("bytes=\(await chunksRead(arguments[1], size: arguments.count == 3 ? Int(arguments[2])! : 64 * 1024))")
default:
    fail(
        "usage: blobstream-bench foundation-read FILE... | asset-read ROOT URL SIZE TIMES [unverified] | stream-read FILE | chunks-read FILE [SIZE]"
    )
}
