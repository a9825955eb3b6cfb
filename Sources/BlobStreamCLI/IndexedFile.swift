// The file `blobstream index` reads: a regular file, never a stream it would wait on.

import BlobStream
import BlobStreamSystem
import Foundation

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
    if ["gzip:", "zstd:"].contains(where: path.lowercased().hasPrefix) { path = BlobURL.removingScheme(path) }
    if BlobURL.scheme(of: path)?.lowercased() == "file" { path = try BlobURL.path(ofFileURL: path) }
    let status: FileStatus
    switch FileStatus.at(path) {
    case .success(let found): status = found
    case .failure(let failure): throw failure.error("'\(path)'", context: "cannot index it")
    }
    guard status.isRegular else {
        throw BlobStreamError(
            .unsupported,
            "cannot index '\(path)': it is \(status.kind), not a regular file (an index records a regular file's size, modification time and sampled bytes; copy the stream to a file and index that)"
        )
    }
    return path
}
