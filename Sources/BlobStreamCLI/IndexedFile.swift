// The file `blobstream index` reads: a regular file, never a stream it would wait on.

import BlobStream
import Foundation
import Glibc

/// The path of the file `blobstream index ARGUMENT` indexes: ARGUMENT as a path, with a
/// `gzip:` prefix and a `file://` URL decoded.
///
/// An index records a regular file's size, modification time and sampled bytes and is read
/// back beside it, so only a regular file can be indexed (through a symbolic link too). A
/// FIFO, a device, a socket or a directory is refused at once, without opening it: a FIFO
/// with no writer does not hold the command up, and its bytes could not be indexed anyway.
///
/// - Throws: `BlobStreamError` naming the path: `.notFound` when nothing is there,
///   `.permissionDenied`/`.ioFailed` when it cannot be examined, `.unsupported` when it is
///   not a regular file; `.malformedURL` for a bad `file://` URL.
package func indexedFilePath(_ argument: String) throws -> String {
    var path = argument
    if path.lowercased().hasPrefix("gzip:") { path = BlobURL.removingScheme(path) }
    if BlobURL.scheme(of: path)?.lowercased() == "file" { path = try BlobURL.path(ofFileURL: path) }
    var info = stat()
    guard stat(path, &info) == 0 else {
        let code = errno
        throw BlobStreamError(
            code == ENOENT ? .notFound : code == EACCES ? .permissionDenied : .ioFailed,
            "cannot open '\(path)' to index it: \(String(cString: strerror(code)))")
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
        throw BlobStreamError(
            .unsupported,
            "cannot index '\(path)': it is \(fileKind(info.st_mode)), not a regular file (an index records a regular file's size, modification time and sampled bytes; copy the stream to a file and index that)"
        )
    }
    return path
}
