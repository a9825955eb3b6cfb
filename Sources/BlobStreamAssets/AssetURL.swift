import BlobStream

/// An asset URL: `assets-library://asset/asset.JPG?id=ID&ext=JPG`, as the original iOS
/// library wrote them. The URL names the asset, not its library: the registry entry for
/// `assets-library` is made with one (`AssetSources.register(in:library:)`).
public struct AssetURL: Sendable, Equatable, CustomStringConvertible {
    /// The scheme, `assets-library`.
    public static let scheme = "assets-library"

    /// The library's id of the asset.
    public var id: String
    /// The file-name extension of the asset's original, as the URL spells it (`JPG`).
    public var ext: String

    /// Makes a URL for an id and an extension.
    public init(id: String, ext: String) {
        self.id = id
        self.ext = ext
    }

    /// Parses `url`: the scheme (any case), `//asset/asset.EXT`, then a query with `id` and
    /// `ext` in any order (other parameters are ignored; values are percent-decoded once).
    ///
    /// - Throws: `BlobStreamError` `.malformedURL` naming `url` and what is wrong.
    public init(parsing url: String) throws {
        func malformed(_ why: String) -> BlobStreamError {
            BlobStreamError(
                .malformedURL,
                "'\(url)' is not an asset URL: \(why) (expected assets-library://asset/asset.JPG?id=ID&ext=JPG)")
        }
        guard BlobURL.scheme(of: url)?.lowercased() == Self.scheme else {
            throw malformed("the scheme is not \(Self.scheme):")
        }
        let rest = BlobURL.removingScheme(url)
        let prefix = "//asset/asset."
        guard rest.lowercased().hasPrefix(prefix) else {
            throw malformed("it does not start with \(Self.scheme)://asset/asset.")
        }
        let afterPrefix = rest.dropFirst(prefix.count)
        guard let question = afterPrefix.firstIndex(of: "?") else { throw malformed("it has no query (?id=…&ext=…)") }
        let pathExt = String(afterPrefix[..<question])
        var id: String?
        var ext: String?
        for pair in afterPrefix[afterPrefix.index(after: question)...].split(
            separator: "&", omittingEmptySubsequences: true)
        {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]).lowercased()
            let value = parts.count > 1 ? try BlobURL.percentDecoded(String(parts[1]), context: url) : ""
            if key == "id" { id = value } else if key == "ext" { ext = value }
        }
        guard let id, !id.isEmpty else { throw malformed("it has no id") }
        let finalExt = ext ?? pathExt
        guard !finalExt.isEmpty else { throw malformed("it has no extension") }
        if !pathExt.isEmpty, pathExt.lowercased() != finalExt.lowercased() {
            throw malformed("the path says .\(pathExt) but ext=\(finalExt)")
        }
        self.id = id
        self.ext = finalExt
    }

    /// The URL as a string: `assets-library://asset/asset.EXT?id=ID&ext=EXT`.
    public var string: String { "\(Self.scheme)://asset/asset.\(ext)?id=\(id)&ext=\(ext)" }

    /// The URL as a string (`assets-library://asset/asset.EXT?id=ID&ext=EXT`).
    public var description: String { string }
}
