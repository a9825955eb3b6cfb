// How a SOURCE on the command line becomes a URL of the registry.

import BlobStream
import BlobStreamArchive
import BlobStreamGzip
import BlobStreamZstd
import Foundation

/// Turns a command-line SOURCE into a URL of the registry: a URL of a registered scheme
/// stays as it is; `-` is standard input; an existing path is a file; `PATH!/member` is a
/// member of the archive at PATH (split at the last `!/`, nesting allowed:
/// `x.deb!/data.tar.xz!/usr/bin/hello`), the member spelled as in an `archive:` URL and as
/// `blobstream ls` prints it (`%0A`, `%C4`, `%25`, `%21` for a newline, a byte that is not
/// UTF-8, `%`, a `!` before `/`); anything else is a path (its open names it). Inside
/// `gzip:` and `archive:` URLs a path to an existing file (`gzip:x.gz`,
/// `archive:../a/x.tar!/m`) is taken relative to the current folder (see
/// `resolvingInnerPaths`). `checkedSourceURL` also refuses an empty SOURCE.
package func sourceURL(_ argument: String, registry: DataSourceRegistry) -> String {
    if argument == "-" { return BlobURL.fileURL(path: "/dev/stdin") }
    if let scheme = BlobURL.scheme(of: argument),
        registry.handles(scheme: scheme) || !FileManager.default.fileExists(atPath: argument)
    {
        // An unregistered scheme is reported by the registry, by name.
        return resolvingInnerPaths(argument, registry: registry)
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

/// `url` with the paths inside its wrapping schemes made URLs: in `gzip:INNER`, `zstd:INNER`
/// and `archive:INNER!/member` (nested as deep as they go), an INNER that is not a URL of a
/// registered scheme but names an existing file, relative to the current folder or
/// absolute, becomes that file's `file://` URL. Anything else is left as it is (the
/// registry then names what is wrong with it).
package func resolvingInnerPaths(_ url: String, registry: DataSourceRegistry) -> String {
    func inner(_ text: String) -> String {
        let exists = !text.isEmpty && FileManager.default.fileExists(atPath: text)
        if let scheme = BlobURL.scheme(of: text), registry.handles(scheme: scheme) || !exists {
            return resolvingInnerPaths(text, registry: registry)
        }
        guard exists else { return text }
        return BlobURL.fileURL(path: text.hasPrefix("/") ? text : FileManager.default.currentDirectoryPath + "/" + text)
    }
    switch BlobURL.scheme(of: url)?.lowercased() {
    case GzipSources.scheme, ZstdSources.scheme:
        return BlobURL.scheme(of: url)!.lowercased() + ":" + inner(BlobURL.removingScheme(url))
    case ArchiveSources.scheme:
        let body = BlobURL.removingScheme(url)
        guard let split = body.range(of: "!/", options: .backwards) else { return url }
        return ArchiveSources.scheme + ":" + inner(String(body[..<split.lowerBound])) + body[split.lowerBound...]
    default:
        return url
    }
}

/// The path inside `url`'s wrapping schemes that names no file (`missing.gz` in
/// `gzip:missing.gz`), if any: what `resolvingInnerPaths` left as it was for want of a file.
package func missingInnerPath(_ url: String, registry: DataSourceRegistry) -> String? {
    func inner(_ text: String) -> String? {
        if let scheme = BlobURL.scheme(of: text), registry.handles(scheme: scheme) {
            return missingInnerPath(text, registry: registry)
        }
        return text.isEmpty || FileManager.default.fileExists(atPath: text) ? nil : text
    }
    switch BlobURL.scheme(of: url)?.lowercased() {
    case GzipSources.scheme, ZstdSources.scheme:
        return inner(BlobURL.removingScheme(url))
    case ArchiveSources.scheme:
        let body = BlobURL.removingScheme(url)
        guard let split = body.range(of: "!/", options: .backwards) else { return nil }
        return inner(String(body[..<split.lowerBound]))
    default:
        return nil
    }
}

/// The local files a SOURCE may read, for a command that writes a file and must never
/// write over one of its inputs (`OutputFile`'s `inputs`): SOURCE itself, and the path
/// inside each `gzip:`, `zstd:` and `archive:` layer of it and inside a `file:` URL. Names
/// that are no files are left out by `OutputFile`.
package func localInputPaths(_ argument: String) -> [String] {
    var paths = [argument]
    var text = argument
    while let scheme = BlobURL.scheme(of: text)?.lowercased() {
        var body = BlobURL.removingScheme(text)
        switch scheme {
        case GzipSources.scheme, ZstdSources.scheme: break
        case ArchiveSources.scheme:
            guard let split = body.range(of: "!/", options: .backwards) else { return paths }
            body = String(body[..<split.lowerBound])
        case "file":
            if let path = URL(string: text)?.path, !path.isEmpty { paths.append(path) }
            return paths
        default: return paths
        }
        paths.append(body)
        text = body
    }
    return paths
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
