import BlobStream

/// Registers the `assets-library:` scheme.
public enum AssetSources {
    /// The scheme this module serves.
    public static let scheme = AssetURL.scheme

    /// Registers `assets-library:` in `registry`, resolved by `library` (asset URLs do not
    /// name their library): `assets-library://asset/asset.JPG?id=ID&ext=JPG` becomes an
    /// `AssetDataSource` streaming the rendition `rendition` asks for (by default the edited
    /// one when the asset has one). A URL that does not follow the grammar is refused at
    /// once (`.malformedURL`); an unknown id fails the open (`.notFound`).
    public static func register(
        in registry: DataSourceRegistry, library: any AssetLibrary, rendition: AssetRenditionChoice = .current
    ) {
        registry.register(scheme: scheme) { url, _ in
            _ = try AssetURL(parsing: url)
            return AssetDataSource(url: url, library: library, rendition: rendition)
        }
    }
}
