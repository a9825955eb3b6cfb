// How a SOURCE on the command line becomes a URL of the registry.

import BlobStream
import Foundation

/// Turns a command-line SOURCE into a URL of the registry: a URL of a registered scheme
/// stays as it is; `-` is standard input; an existing path is a file; `PATH!/member` is a
/// member of the archive at PATH (split at the last `!/`, nesting allowed:
/// `x.deb!/data.tar.xz!/usr/bin/hello`), the member spelled as in an `archive:` URL and as
/// `blobstream ls` prints it (`%0A`, `%C4`, `%25`, `%21` for a newline, a byte that is not
/// UTF-8, `%`, a `!` before `/`); anything else is a path (its open names it). `checkedSourceURL`
/// also refuses an empty SOURCE.
package func sourceURL(_ argument: String, registry: DataSourceRegistry) -> String {
    if argument == "-" { return BlobURL.fileURL(path: "/dev/stdin") }
    if let scheme = BlobURL.scheme(of: argument),
        registry.handles(scheme: scheme) || !FileManager.default.fileExists(atPath: argument)
    {
        return argument // an unregistered scheme is reported by the registry, by name
    }
    if !FileManager.default.fileExists(atPath: argument), let split = argument.range(of: "!/", options: .backwards),
        split.lowerBound > argument.startIndex
    {
        let archive = sourceURL(String(argument[..<split.lowerBound]), registry: registry)
        let member = String(argument[split.upperBound...])
        return "archive:" + archive + "!/" + member
    }
    let path = argument.hasPrefix("/") ? argument : FileManager.default.currentDirectoryPath + "/" + argument
    return BlobURL.fileURL(path: path)
}

/// `sourceURL`, for a SOURCE that is not empty.
///
/// - Throws: `BlobStreamError` `.malformedURL` for an empty SOURCE (which would otherwise
///   name the current folder).
package func checkedSourceURL(_ argument: String, registry: DataSourceRegistry) throws -> String {
    guard !argument.isEmpty else {
        throw BlobStreamError(
            .malformedURL, "an empty SOURCE names nothing (give a path, a URL, or - for standard input)")
    }
    return sourceURL(argument, registry: registry)
}
