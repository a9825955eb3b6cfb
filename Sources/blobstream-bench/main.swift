// blobstream-bench: baseline programs for `make bench`, so that BlobStream is compared with
// Foundation's own streams in the same run.
//
//   blobstream-bench foundation-read FILE...   read each FILE with InputStream(fileAtPath:),
//                                              64 KiB reads; prints the byte count
import Foundation

func foundationRead(_ paths: [String]) -> Int {
    var total = 0
    let size = 64 * 1024
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
    defer { buffer.deallocate() }
    for path in paths {
        guard let stream = InputStream(fileAtPath: path) else {
            FileHandle.standardError.write(Data("blobstream-bench: cannot open \(path)\n".utf8))
            exit(1)
        }
        stream.open()
        while true {
            let n = stream.read(buffer, maxLength: size)
            if n < 0 {
                FileHandle.standardError.write(Data("blobstream-bench: read error in \(path)\n".utf8))
                exit(1)
            }
            if n == 0 { break }
            total += n
        }
        stream.close()
    }
    return total
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "foundation-read":
    print(foundationRead(Array(arguments.dropFirst())))
default:
    FileHandle.standardError.write(Data("usage: blobstream-bench foundation-read FILE...\n".utf8))
    exit(2)
}
