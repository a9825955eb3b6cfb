import BlobStream
import Foundation

/// A folder of index files kept on this machine for remote objects (gzip seek-point indexes
/// and archive member indexes), keyed by the object's URL and identity (size and strong
/// ETag), bounded in size and pruned oldest first.
///
/// Nothing is kept unless asked: a lookup given a cache (`GzipIndex.lookUp(for:at:indexURL:cache:makeSource:)`,
/// `ArchiveIndex.lookUp(for:at:indexURL:cache:makeSource:)`) reads a cached index before
/// asking the store for the one beside the object, and keeps a copy of that one when it
/// matches; `blobstream index --index-cache` writes into it instead of beside the object. An
/// index read from the cache is checked against the object like any other: one made for
/// another version of the object is not used.
///
/// ```swift
/// let cache = IndexCache(folder: IndexCache.defaultFolder ?? "/tmp/indexes", sizeLimit: 256 << 20)
/// let found = try GzipIndex.lookUp(for: object, at: url, cache: cache) { try registry.makeSource(url: $0) }
/// ```
public struct IndexCache: Sendable, Equatable {
    /// The kinds of index the cache keeps, each a file extension.
    public enum Kind: String, Sendable {
        /// A gzip seek-point index (GZIDX with BlobStream's record).
        case gzip = "gzidx"
        /// An archive member index (`.blobidx`).
        case archive = "blobidx"
    }

    /// The folder the index files are in (made when the first one is kept).
    public let folder: String
    /// The most bytes the folder's index files may take: after a file is kept, the oldest
    /// (least recently used) are removed until the rest fit.
    public let sizeLimit: Int64

    /// The size limit when none is given: 1 GiB.
    public static let defaultSizeLimit: Int64 = 1 << 30

    /// A cache in `folder`, bounded by `sizeLimit` bytes.
    public init(folder: String, sizeLimit: Int64 = IndexCache.defaultSizeLimit) {
        self.folder = folder
        self.sizeLimit = max(0, sizeLimit)
    }

    /// The user's cache folder for indexes: `$XDG_CACHE_HOME/blobstream/indexes`, else
    /// `$HOME/.cache/blobstream/indexes` (the XDG base directory default); nil when neither
    /// variable is set to an absolute path.
    public static var defaultFolder: String? {
        let environment = ProcessInfo.processInfo.environment
        if let base = environment["XDG_CACHE_HOME"], base.hasPrefix("/") {
            return base + "/blobstream/indexes"
        }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return home + "/.cache/blobstream/indexes"
        }
        return nil
    }

    /// Where the index of `kind` of the object at `url` with `identity` is kept (it may not
    /// be there): a name made of a hash of the URL, size and ETag.
    public func path(forSourceAt url: String, identity: BlobContentIdentity, kind: Kind) -> String {
        let key = "\(url)\n\(identity.size)\n\(identity.entityTag ?? "")"
        return folder + "/" + Self.hash(key) + "." + kind.rawValue
    }

    /// The path of the kept index of `kind` for the object, when there is one (its use time
    /// is set to now, so that pruning removes it last).
    public func existingPath(forSourceAt url: String, identity: BlobContentIdentity, kind: Kind) -> String? {
        let path = path(forSourceAt: url, identity: identity, kind: kind)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path)
        return path
    }

    /// Keeps `bytes` as the index of `kind` of the object (replacing any kept before,
    /// atomically), then prunes the folder to its size limit.
    ///
    /// - Returns: the path written.
    /// - Throws: `BlobStreamError` `.ioFailed` naming the folder or the file.
    @discardableResult
    public func keep(
        _ bytes: some DataProtocol, forSourceAt url: String, identity: BlobContentIdentity, kind: Kind
    ) throws(BlobStreamError) -> String {
        let path = path(forSourceAt: url, identity: identity, kind: kind)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw BlobStreamError(
                .ioFailed, "cannot keep the index of \(url) in the index cache \(folder)", cause: error)
        }
        prune(keeping: path)
        return path
    }

    /// Removes the least recently used index files until the rest take at most `sizeLimit`
    /// bytes, never `keeping` (the file just kept). Files of other kinds in the folder are
    /// left alone.
    public func prune(keeping: String? = nil) {
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: folder) else { return }
        let kinds = [Kind.gzip, .archive].map { "." + $0.rawValue }
        var files: [(path: String, size: Int64, used: Date)] = []
        for name in names where kinds.contains(where: { name.hasSuffix($0) }) {
            let path = folder + "/" + name
            guard let attributes = try? manager.attributesOfItem(atPath: path),
                attributes[.type] as? FileAttributeType == .typeRegular
            else { continue }
            files.append(
                (
                    path, (attributes[.size] as? NSNumber)?.int64Value ?? 0,
                    attributes[.modificationDate] as? Date ?? .distantPast
                ))
        }
        var total = files.reduce(Int64(0)) { $0 + $1.size }
        // Oldest first; the file just kept never (alone past the limit, it stays).
        files.sort { $0.used < $1.used }
        for file in files where total > sizeLimit && file.path != keeping {
            if (try? manager.removeItem(atPath: file.path)) != nil { total -= file.size }
        }
    }

    /// 128 bits of two FNV-1a hashes of `text`, in hex: a file name that says nothing of
    /// the URL (a cached index is checked against the object on use, so a collision can
    /// cost a lookup, never wrong bytes).
    private static func hash(_ text: String) -> String {
        var a: UInt64 = 0xCBF2_9CE4_8422_2325
        var b: UInt64 = 0x8422_2325_CBF2_9CE4
        for byte in text.utf8 {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            b = (b ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 &+ 0x9E37_79B9
        }
        return String(format: "%016llx%016llx", a, b)
    }
}

extension IndexCache {
    /// Keeps a copy of the index object at `indexURL` (read whole through a source
    /// `makeSource` makes) as the index of `kind` of the object at `url`. A failure is
    /// returned, not thrown: the read goes on through the index it already has.
    package func keepCopy(
        of indexURL: String, forSourceAt url: String, identity: BlobContentIdentity, kind: Kind,
        makeSource: (String) throws -> any BlobDataSource
    ) -> BlobStreamError? {
        do {
            let made = try makeSource(indexURL)
            defer { made.close() }
            guard let object = made as? any BlobRangeReading else {
                return BlobStreamError(.unsupported, "\(indexURL): its source cannot be read by range")
            }
            object.open()
            _ = try object.contentIdentity()
            guard let length = object.length else {
                return BlobStreamError(.unsupported, "\(indexURL): its length is unknown")
            }
            let bytes = try object.bytes(at: [0..<length]).first ?? Data()
            try keep(bytes, forSourceAt: url, identity: identity, kind: kind)
            return nil
        } catch {
            return (error as? BlobStreamError) ?? BlobStreamError(.ioFailed, "\(indexURL): \(error)", cause: error)
        }
    }
}
