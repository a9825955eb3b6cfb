import BlobStream
import BlobStreamSystem
import Foundation

/// A folder of index files kept on this machine for remote objects (gzip seek-point indexes
/// and archive member indexes), keyed by the object's URL and identity (size and strong
/// ETag), bounded in size and pruned oldest first.
///
/// Nothing is kept unless asked: a lookup given a cache
/// (`LocatableIndex.lookUp(for:at:indexURL:cache:makeSource:)`, for every kind) reads a cached index before
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
        /// A zstd frame index (`.zstidx`).
        case zstd = "zstidx"

        /// The index of this kind beside a source: the source's path or URL followed by
        /// `.gzidx`, `.blobidx` or `.zstidx`, the one naming rule of every sidecar (local or remote).
        public func sidecar(of pathOrURL: String) -> String { pathOrURL + "." + rawValue }

        /// How messages name an index of this kind: `gzip index`, `archive index`.
        public var noun: String {
            switch self {
            case .gzip: "gzip index"
            case .archive: "archive index"
            case .zstd: "zstd frame index"
            }
        }
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
    /// be there): `blobstream-cache-HASH.gzidx` (or `.blobidx`), HASH a hash of the URL, the
    /// server the object is read from (`serverOrigin`: scheme, host and port, as
    /// `BlobRangeReading.serverOrigin` gives it; an `s3://bucket/key` URL does not name its
    /// store), the size and the ETag. Only files named so are the cache's: pruning removes
    /// no other file in the folder.
    public func path(
        forSourceAt url: String, serverOrigin: String? = nil, identity: BlobContentIdentity, kind: Kind
    ) -> String {
        let key = "\(url)\n\(serverOrigin ?? "")\n\(identity.size)\n\(identity.entityTag ?? "")"
        return folder + "/" + Self.entryPrefix + Self.hash(key) + "." + kind.rawValue
    }

    /// How the names of the cache's own files begin.
    static let entryPrefix = "blobstream-cache-"

    /// `name` is one the cache gives its files: `blobstream-cache-`, 32 lower-case hex
    /// digits, `.gzidx` or `.blobidx`. A user's own index (`photos.tar.gz.blobidx`) is not.
    public static func isEntryName(_ name: String) -> Bool {
        guard name.hasPrefix(entryPrefix) else { return false }
        let rest = name.utf8.dropFirst(entryPrefix.utf8.count)
        guard let dot = rest.firstIndex(of: UInt8(ascii: ".")) else { return false }
        let digits = rest[..<dot]
        let kind = String(decoding: rest[rest.index(after: dot)...], as: UTF8.self)
        return digits.count == 32
            && digits.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
            && Kind(rawValue: kind) != nil
    }

    /// The path of the kept index of `kind` for the object, when there is one, a regular
    /// file (its use time is set to now, so that pruning removes it last). Anything else at
    /// that name (a FIFO, a symbolic link, a folder) is not a kept index.
    public func existingPath(
        forSourceAt url: String, serverOrigin: String? = nil, identity: BlobContentIdentity, kind: Kind
    ) -> String? {
        let path = path(forSourceAt: url, serverOrigin: serverOrigin, identity: identity, kind: kind)
        guard Self.isRegularFile(path) else { return nil }
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path)
        return path
    }

    /// The kept index of `kind` for the object, opened, when a regular file is there (its
    /// use time set to now). Opened without waiting and without following a link: a FIFO
    /// made at its name cannot hold the read up, nor a link lead elsewhere.
    package func openEntry(
        forSourceAt url: String, serverOrigin: String?, identity: BlobContentIdentity, kind: Kind
    ) -> (path: String, file: PositionalFile)? {
        let path = path(forSourceAt: url, serverOrigin: serverOrigin, identity: identity, kind: kind)
        guard let file = PositionalFile.openRegularFile(path) else { return nil }
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path)
        return (path, file)
    }

    /// Keeps `bytes` as the index of `kind` of the object (replacing any kept before,
    /// atomically), then prunes the folder to its size limit.
    ///
    /// - Returns: the path written.
    /// - Throws: `BlobStreamError` `.ioFailed` naming the folder or the file.
    @discardableResult
    public func keep(
        _ bytes: some DataProtocol, forSourceAt url: String, serverOrigin: String? = nil,
        identity: BlobContentIdentity, kind: Kind
    ) throws(BlobStreamError) -> String {
        let path = path(forSourceAt: url, serverOrigin: serverOrigin, identity: identity, kind: kind)
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

    /// Removes the least recently used of the cache's own index files (named as `path`
    /// names them: `isEntryName`) until they take at most `sizeLimit` bytes, never `keeping`
    /// (the file just kept). Every other file in the folder is left alone and not counted:
    /// a user's own `.blobidx` and `.gzidx` files there are never removed.
    public func prune(keeping: String? = nil) {
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: folder) else { return }
        var files: [(path: String, size: Int64, used: Date)] = []
        for name in names where Self.isEntryName(name) {
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

    /// A regular file is at `path` (`lstat`: not a link to one).
    private static func isRegularFile(_ path: String) -> Bool {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType == .typeRegular
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
        of indexURL: String, forSourceAt url: String, serverOrigin: String?, identity: BlobContentIdentity,
        kind: Kind,
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
            try keep(bytes, forSourceAt: url, serverOrigin: serverOrigin, identity: identity, kind: kind)
            return nil
        } catch {
            return (error as? BlobStreamError) ?? BlobStreamError(.ioFailed, "\(indexURL): \(error)", cause: error)
        }
    }
}
