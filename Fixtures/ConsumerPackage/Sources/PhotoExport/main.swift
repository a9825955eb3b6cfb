// Streams a photo out of a tar archive through BlobInputStream, with the archive named by a
// scheme this package registers itself: `fixture:photos.tar` is the repository's sample tar.
import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import Foundation

let fixtures = URL(fileURLWithPath: CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "../")
let registry = DataSourceRegistry()
FileSources.register(in: registry)
ArchiveSources.register(in: registry)
registry.register(scheme: "fixture") { url, _ in
    FileDataSource(path: fixtures.appendingPathComponent("archives/" + BlobURL.removingScheme(url)).path)
}

let stream = try BlobInputStream(url: "archive:fixture:photos.tar!/DCIM/100TEST/IMG_0001.JPG", registry: registry)
stream.open()
var bytes = Data()
var buffer = [UInt8](repeating: 0, count: 4096)
while true {
    let n = stream.read(&buffer, maxLength: buffer.count)
    if n < 0 { fatalError("\(stream.streamError!)") }
    if n == 0 { break }
    bytes.append(buffer, count: n)
}
let expected = try Data(contentsOf: fixtures.appendingPathComponent("files/photo.jpg"))
print("IMG_0001.JPG: \(bytes.count) bytes, \(bytes == expected ? "identical to" : "DIFFERENT from") files/photo.jpg")
exit(bytes == expected ? 0 : 1)
