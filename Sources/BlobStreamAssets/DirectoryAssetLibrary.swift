import BlobStream
import BlobStreamSystem
import Foundation

/// A photo library on disk, the way the original iOS library was used: every asset is a
/// file under `originals/` (at any depth), and an edited rendition of it, when it has been
/// edited, is the file at the same relative path under `renders/`.
///
/// ```
/// Library/
///   originals/IMG_0001.JPG
///   originals/2024/Trip/IMG_0003.JPG
///   renders/2024/Trip/IMG_0003.JPG      the edited rendition of the asset above
/// ```
///
/// - **Ids** are stable across runs and machines: 128 bits of a hash of the asset's path
///   relative to `originals/`, written like a UUID. Renaming or moving a file makes it another
///   asset. Hidden files (`.name`) and files without an extension are not assets.
/// - **URLs** are `assets-library://asset/asset.JPG?id=ID&ext=JPG`, the extension being the
///   original's; a URL whose extension does not match the asset's is not found.
/// - **Lookups** (`asset(for:completion:)`) run on a queue of the library's own and answer
///   on `callbackQueue`. `asset(for:)` does the same synchronously on the caller's thread.
/// - **Invalidation.** A change anywhere in the library (a file added, replaced, removed,
///   written or touched; a folder created) invalidates every representation handed out
///   before it: the library watches its folders with inotify and counts changes in
///   `generation`; a representation remembers the generation of its lookup, and its
///   `getBytes` checks it (an atomic load), then `fstat`s the file it opened and compares
///   size, mtime and ctime with what they were, so a change of that file (written, truncated,
///   removed or replaced: unlinking it moves its ctime) is seen at once even before the
///   inotify event arrives (events come shortly after the change). When
///   inotify is not available (out of instances or watches) only the second check remains,
///   and the id index is rebuilt at every lookup.
/// - **Fingerprint** (content-change detection after an invalidation): the size and a
///   64-bit hash of the bytes — the whole file up to 192 KiB, otherwise 64 KiB at its start,
///   middle and end. A file rewritten with the same bytes (new inode, new mtime) keeps its
///   fingerprint, so a reader goes on; any change of size, and any change within the hashed
///   bytes (every change of a photo up to 192 KiB; header, metadata or re-encoding of larger
///   ones), shows. A same-size change confined to the unhashed middle of a large file does
///   not: that is the price of not reading the whole file at each lookup. (An
///   `AssetDataSource` that resumes after an invalidation does not rely on it: it compares
///   the bytes it already handed out with the file's.)
public final class DirectoryAssetLibrary: AssetLibrary, Sendable {
    /// One asset, as `assets()` lists it.
    public struct Entry: Sendable, Equatable {
        /// The asset's stable id.
        public let id: String
        /// The asset's URL.
        public let url: String
        /// The path relative to `originals/` (and to `renders/` for its edited rendition).
        public let relativePath: String
        /// The size of what a source streams by default: the edited rendition when there is
        /// one, the original otherwise.
        public let size: Int64
        /// The size of the original.
        public let originalSize: Int64
        /// The size of the edited rendition, nil when the asset has none.
        public let editedSize: Int64?
        /// The original's last modification.
        public let modificationDate: Date
        /// The uniform type identifier (from the extension).
        public let uti: String

        /// Whether the asset has an edited rendition.
        public var isEdited: Bool { editedSize != nil }
    }

    private struct Index {
        var generation: UInt64 = 0
        var built = false
        var paths: [String: String] = [:]
    }

    /// The library's folder (holding `originals/` and `renders/`).
    public let root: URL
    /// Where lookups answer.
    public let callbackQueue: DispatchQueue
    private let rootPath: String
    private let workQueue = DispatchQueue(label: "BlobStreamAssets.DirectoryAssetLibrary.lookup")
    private let changes = Generation()
    private let watcher: LibraryWatcher
    private let index = Locked(Index())

    /// Opens the library at `root`; nothing is read until a lookup. A root that does not
    /// exist (yet) is not an error here: lookups then fail with `.notFound`, naming it.
    ///
    /// - Parameters:
    ///   - root: the folder that holds `originals/` (and `renders/`).
    ///   - callbackQueue: where lookups answer; a serial queue of the library's own by default.
    public init(root: URL, callbackQueue: DispatchQueue? = nil) {
        self.root = root
        var path = root.path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        self.rootPath = path
        self.callbackQueue = callbackQueue ?? DispatchQueue(label: "BlobStreamAssets.DirectoryAssetLibrary.callback")
        self.watcher = LibraryWatcher(root: path, generation: changes)
        watcher.start()
    }

    deinit { watcher.stop() }

    /// How many changes the library has seen; representations from before a change are
    /// invalid. Moves shortly after a change on disk (when the inotify event arrives).
    public var generation: UInt64 { changes.current }

    /// Whether inotify watches the library (see the type's documentation).
    public var isWatching: Bool { watcher.isActive }

    /// The stable id of the asset at `relativePath` under `originals/`.
    public static func assetID(forRelativePath relativePath: String) -> String {
        AssetNaming.id(forRelativePath: relativePath)
    }

    /// The URL of the asset at `relativePath` under `originals/`, or nil when the name has
    /// no extension (not an asset).
    public static func assetURL(forRelativePath relativePath: String) -> String? {
        guard let ext = AssetNaming.ext(of: (relativePath as NSString).lastPathComponent) else { return nil }
        return AssetURL(id: assetID(forRelativePath: relativePath), ext: ext).string
    }

    // MARK: - Listing

    /// Every asset, sorted by relative path.
    ///
    /// - Throws: `BlobStreamError` `.notFound` when the library's folder or its `originals/`
    ///   does not exist, `.unsupported` when it is not a folder.
    public func assets() throws -> [Entry] {
        let originals = try checkRoot(context: "cannot list the asset library")
        watcher.start()
        var entries: [Entry] = []
        for rel in DirectoryWalker.files(under: originals) {
            guard case .success(let original) = FileStatus.at(originals + "/" + rel),
                let url = Self.assetURL(forRelativePath: rel)
            else { continue } // removed meanwhile
            var edited: Int64?
            if case .success(let render) = FileStatus.at(rootPath + "/renders/" + rel), render.isRegular {
                edited = render.size
            }
            entries.append(
                Entry(
                    id: Self.assetID(forRelativePath: rel), url: url, relativePath: rel,
                    size: edited ?? original.size, originalSize: original.size, editedSize: edited,
                    modificationDate: Date(timeIntervalSince1970: original.modificationTime),
                    uti: AssetNaming.uti(forExtension: AssetNaming.ext(of: rel) ?? "")))
        }
        return entries
    }

    // MARK: - Lookups

    /// Looks up `url` on a queue of the library's own and answers on `callbackQueue`.
    public func asset(for url: String, completion: @escaping @Sendable (Result<Asset, any Error>) -> Void) {
        let callbackQueue = self.callbackQueue
        workQueue.async {
            let result = Result { try self.asset(for: url) }
            callbackQueue.async { completion(result) }
        }
    }

    /// Looks up `url` synchronously, on the caller's thread.
    ///
    /// - Throws: `BlobStreamError` naming `url`: `.malformedURL`; `.notFound` (no such
    ///   library folder, no asset with that id, or with that id but another extension);
    ///   `.permissionDenied`, `.unsupported`, `.ioFailed` opening its files.
    public func asset(for url: String) throws -> Asset {
        let parsed = try AssetURL(parsing: url)
        let generation = changes.current // before looking: a change from now on invalidates
        let originals = try checkRoot(context: "cannot look up '\(url)'")
        watcher.start()
        guard let rel = relativePath(forID: parsed.id, originals: originals) else {
            throw BlobStreamError(
                .notFound, "no asset with id \(parsed.id) in the asset library '\(rootPath)' (looking up '\(url)')")
        }
        let ext = AssetNaming.ext(of: rel) ?? ""
        guard ext.lowercased() == parsed.ext.lowercased() else {
            throw BlobStreamError(
                .notFound,
                "no asset with id \(parsed.id) and extension .\(parsed.ext) in the asset library '\(rootPath)': its extension is .\(ext) (looking up '\(url)')"
            )
        }
        let canonical = AssetURL(id: parsed.id, ext: ext).string
        let original = try DirectoryRepresentation(
            path: originals + "/" + rel, rendition: .original, url: url, generation: changes, lookedUpAt: generation)
        var edited: DirectoryRepresentation?
        let renderPath = rootPath + "/renders/" + rel
        if case .success(let render) = FileStatus.at(renderPath), render.isRegular {
            edited = try DirectoryRepresentation(
                path: renderPath, rendition: .edited, url: url, generation: changes, lookedUpAt: generation)
        }
        return Asset(url: canonical, id: parsed.id, original: original, edited: edited)
    }

    /// The path of `originals/`, after checking that the library is there.
    private func checkRoot(context: String) throws -> String {
        switch FileStatus.at(rootPath) {
        case .failure(let cause):
            throw BlobStreamError(
                .notFound, "\(context): the asset library '\(rootPath)' does not exist", cause: cause.cause)
        case .success(let id) where !id.isDirectory:
            throw BlobStreamError(.unsupported, "\(context): the asset library '\(rootPath)' is not a folder")
        case .success:
            break
        }
        let originals = rootPath + "/originals"
        guard case .success(let id) = FileStatus.at(originals), id.isDirectory else {
            throw BlobStreamError(.notFound, "\(context): the asset library '\(rootPath)' has no originals/ folder")
        }
        return originals
    }

    /// The relative path of an id, from the index; the index is rebuilt when the library
    /// changed since it was built (always, without inotify), and once more on a miss.
    private func relativePath(forID id: String, originals: String) -> String? {
        let watched = watcher.isActive
        return index.withLock { index in
            let now = changes.current
            if !index.built || !watched || index.generation != now {
                rebuild(&index, originals: originals, generation: now)
            } else if index.paths[id] == nil {
                rebuild(&index, originals: originals, generation: now) // a change not seen yet
            } else {
                return index.paths[id]
            }
            return index.paths[id]
        }
    }

    private func rebuild(_ index: inout Index, originals: String, generation: UInt64) {
        var paths: [String: String] = [:]
        for rel in DirectoryWalker.files(under: originals) {
            paths[Self.assetID(forRelativePath: rel)] = rel
        }
        index = Index(generation: generation, built: true, paths: paths)
    }
}
