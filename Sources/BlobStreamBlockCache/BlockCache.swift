import BlobStream
import BlobStreamChecksums
import BlobStreamSystem
import Crypto
import Foundation

/// A folder of blocks of remote objects kept on this machine, so that the second read of an
/// object is a local read: the stored bytes of an object (before any decoding), cut in
/// blocks of `blockSize` bytes aligned to the object's start, each kept with its CRC-32C and
/// checked on every read.
///
/// A block is found by its object's ``ObjectKey`` (URL, the server it is read from, ETag and
/// size) and its index: another version of the object (another ETag or size) has other keys,
/// so its blocks are never served for this one, and the first block kept for a new version
/// drops the blocks of the others. A block whose file is damaged (a flipped byte, cut short,
/// replaced by a FIFO, a symbolic link or a folder) is a miss and is removed; it is never
/// served, and nothing is ever read or removed through a link.
///
/// The folder is bounded by `sizeLimit` bytes: when a block kept takes it past the limit,
/// the least recently used blocks (kept or read longest ago) are removed until it is back
/// below, under an advisory lock (`flock`) that only writers take. Each block is written to
/// an unnamed file, then renamed into place: a reader sees the old block or the new one,
/// never a part, whatever another process does or a crash leaves behind.
///
/// ```swift
/// let cache = BlockCache(folder: BlockCache.defaultFolder ?? "/tmp/blocks", sizeLimit: 4 << 30)
/// let key = BlockCache.ObjectKey(url: url, serverOrigin: origin, entityTag: etag, size: size)
/// if let bytes = cache.read(key, block: 3) { … } else { bytes = fetch(cache.range(ofBlock: 3, in: key)); try? cache.write(key, block: 3, bytes: bytes) }
/// ```
public struct BlockCache: Sendable {
    /// Which object a block belongs to: one version of one object at one place.
    public struct ObjectKey: Sendable, Hashable, Codable {
        /// The object's URL as the user gave it (`https://…`, `s3://bucket/key`).
        public var url: String
        /// The server the object is read from (scheme, host and port, as
        /// `BlobRangeReading.serverOrigin` gives it): an `s3://` URL does not name its store.
        public var serverOrigin: String?
        /// The object's strong ETag (only a strong one names one version of the bytes).
        public var entityTag: String
        /// The object's size in bytes.
        public var size: Int64

        /// Whether blocks of the object may be kept: its ETag is a strong one (not empty, not
        /// `W/"…"`, which names equivalent content, not the same bytes).
        public var isCacheable: Bool { !entityTag.isEmpty && !entityTag.hasPrefix("W/") && size >= 0 }

        /// The key of the object at `url` (as `serverOrigin` served it, when known) in the
        /// version whose strong ETag is `entityTag` and whose size is `size`.
        public init(url: String, serverOrigin: String? = nil, entityTag: String, size: Int64) {
            self.url = url
            self.serverOrigin = serverOrigin
            self.entityTag = entityTag
            self.size = size
        }
    }

    /// What the folder holds (for `blobstream cache`).
    public struct Summary: Sendable, Equatable {
        /// One version of one object in the cache.
        public struct Object: Sendable, Equatable {
            /// Its key, when its description file is there and matches its folder.
            public var key: ObjectKey?
            /// How many blocks of it are kept.
            public var blocks: Int
            /// The bytes its block files take.
            public var bytes: Int64
        }

        /// The objects, most bytes first.
        public var objects: [Object]
        /// The bytes all block files take (headers included): what the limit bounds.
        public var totalBytes: Int64
        /// The cache's limit.
        public var sizeLimit: Int64
        /// The cache's folder.
        public var folder: String
    }

    /// The folder the blocks are in (made when the first one is kept; its own, not the
    /// index cache's).
    public let folder: String
    /// The most bytes the block files may take (their headers included). A block kept may
    /// take the folder past it by at most one block, before the oldest are removed.
    public let sizeLimit: Int64
    /// The size of every block but an object's last, in bytes; block `i` holds the object's
    /// bytes `i * blockSize ..< (i + 1) * blockSize`.
    public let blockSize: Int

    /// A failure the tests inject into block writes: after this many bytes of a block file
    /// are written, the write fails with `ENOSPC` (a full disk).
    package var failWritesAfterBytes: Int?

    /// How long a write waits for the writers' lock (another writer's eviction) before it
    /// gives its block up, in seconds: a process stopped holding the lock never stalls a
    /// read that keeps what it fetched.
    package var lockTimeout: Double = 2

    /// The size limit when none is given: 4 GiB.
    public static let defaultSizeLimit: Int64 = 4 << 30
    /// The block size when none is given: 1 MiB.
    public static let defaultBlockSize = 1 << 20

    /// A cache in `folder`, bounded by `sizeLimit` bytes, in blocks of `blockSize` bytes
    /// (at least 1, at most 1 GiB).
    public init(
        folder: String, sizeLimit: Int64 = BlockCache.defaultSizeLimit, blockSize: Int = BlockCache.defaultBlockSize
    ) {
        self.folder = folder.count > 1 && folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        self.sizeLimit = max(0, sizeLimit)
        self.blockSize = min(max(1, blockSize), 1 << 30)
    }

    /// The user's folder for blocks: `$XDG_CACHE_HOME/blobstream/blocks`, else
    /// `$HOME/.cache/blobstream/blocks`; nil when neither is set to an absolute path.
    public static var defaultFolder: String? {
        let environment = ProcessInfo.processInfo.environment
        if let base = environment["XDG_CACHE_HOME"], base.hasPrefix("/") { return base + "/blobstream/blocks" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.cache/blobstream/blocks" }
        return nil
    }

    // MARK: Blocks of an object

    /// How many blocks the object has.
    public func blockCount(of key: ObjectKey) -> Int {
        key.size <= 0 ? 0 : Int((key.size - 1) / Int64(blockSize)) + 1
    }

    /// The object's bytes block `index` holds; nil when the object has no such block.
    public func range(ofBlock index: Int, in key: ObjectKey) -> Range<Int64>? {
        guard index >= 0, index < blockCount(of: key) else { return nil }
        let start = Int64(index) * Int64(blockSize)
        return start..<min(key.size, start + Int64(blockSize))
    }

    // MARK: Reading

    /// The bytes of block `index` of the object, when a whole block that passes its checks
    /// is kept (its use time is then set to now); nil otherwise. A file there that fails a
    /// check (its header, its length, its CRC-32C, or not a regular file) is removed.
    /// Never waits on the file (`O_NONBLOCK`) nor follows a link (`O_NOFOLLOW`).
    public func read(_ key: ObjectKey, block index: Int) -> [UInt8]? {
        guard key.isCacheable, let range = range(ofBlock: index, in: key) else { return nil }
        let version = versionDigest(key)
        let file: BeneathFile
        switch CacheFolderCalls.openBeneath(
            folder, folders: [urlDigest(key.url, key.serverOrigin), Self.hex(version)], name: Self.blockName(index))
        {
        case .missing, .refusedFolder: return nil
        case .refused(let refused):
            // A link there (ELOOP) is removed, never followed.
            refused.remove()
            return nil
        case .opened(let opened): file = opened
        }
        let length = Int(range.count)
        guard case .success(let status) = file.status(), status.kind == .regular,
            status.size == Int64(BlockHeader.size + length)
        else {
            file.remove()
            return nil
        }
        var headerBytes = [UInt8](repeating: 0, count: BlockHeader.size)
        let headerRead = headerBytes.withUnsafeMutableBytes {
            file.readFully(into: $0.baseAddress!, count: BlockHeader.size, at: 0)
        }
        guard case .success(BlockHeader.size) = headerRead, let header = BlockHeader(headerBytes),
            header.version == version, header.blockIndex == UInt64(index), header.payloadLength == UInt32(length)
        else {
            file.remove()
            return nil
        }
        var complete = false
        let payload = [UInt8](unsafeUninitializedCapacity: length) { buffer, done in
            done = 0
            guard length > 0 else { return }
            if case .success(let n) = file.readFully(
                into: buffer.baseAddress!, count: length, at: Int64(BlockHeader.size))
            {
                done = n
                complete = n == length
            }
        }
        guard complete, CRC32C.update(0, payload) == header.payloadCRC else {
            file.remove()
            return nil
        }
        CacheFolderCalls.touch(file.file)
        return payload
    }

    // MARK: Writing

    /// Keeps `bytes` as block `index` of the object (replacing the one kept, atomically),
    /// then, when the folder is past its limit, removes the least recently used blocks. The
    /// first block kept of a version of an object removes the blocks of its other versions.
    ///
    /// - Throws: `BlobStreamError` `.unsupported` when the object's ETag is not a strong one
    ///   (``ObjectKey/isCacheable``); `.invalidOffset` when the object has no such block or
    ///   `bytes` is not its length; `.ioFailed` (naming the cache's folder and the system's
    ///   error) when the block could not be written (a full disk): nothing of it is kept.
    public func write(_ key: ObjectKey, block index: Int, bytes: [UInt8]) throws(BlobStreamError) {
        guard key.isCacheable else {
            throw BlobStreamError(
                .unsupported, "block cache: \(key.url) has no strong ETag (\(key.entityTag)); its blocks are not kept")
        }
        guard let range = range(ofBlock: index, in: key) else {
            throw BlobStreamError(.invalidOffset, "block cache: \(key.url) has no block \(index)")
        }
        guard bytes.count == range.count else {
            throw BlobStreamError(
                .invalidOffset, "block cache: block \(index) of \(key.url) is \(range.count) bytes, not \(bytes.count)")
        }
        let version = versionDigest(key)
        let objectFolder = try prepareObjectFolder(key, version: version)
        let path = objectFolder + "/" + Self.blockName(index)
        let header = BlockHeader(
            version: version, blockIndex: UInt64(index), payloadLength: UInt32(bytes.count),
            payloadCRC: CRC32C.update(0, bytes)
        ).encoded()
        let lock = try openLock()
        var locked = false
        var replaced: Int64 = 0
        defer { if locked { lock.unlock() } }
        let failAfter = failWritesAfterBytes
        let result: Result<Void, SystemCallFailure>
        do {
            result = try AtomicFileWrite.write(
                // No fsync: every read checks the block whole. The folder's scan (an
                // eviction, `prune`, `contents`) removes a killed writer's temporary file.
                to: path, mode: 0o600, flushes: false, removesLeftovers: false,
                beforeRename: {
                    // The rename and the count change together: no block is ever uncounted.
                    locked = lock.lock(timeout: lockTimeout)
                    if let old = CacheFolderCalls.linkStatus(path), old.kind == .regular { replaced = old.size }
                    return locked
                }
            ) { write in
                var allowed = failAfter ?? Int.max
                for part in [header, bytes] {
                    try part.withUnsafeBytes { raw in
                        guard allowed >= raw.count else {
                            try write(UnsafeRawBufferPointer(rebasing: raw[..<allowed]))
                            throw SystemCallFailure("write", .noSpace)
                        }
                        try write(raw)
                        allowed -= raw.count
                    }
                }
            }
        } catch {
            result = .failure(error as? SystemCallFailure ?? SystemCallFailure("write", .ioError))
        }
        if case .failure(let failure) = result {
            if failure.isCanceled {
                throw BlobStreamError(
                    .ioFailed,
                    "block cache \(folder): its lock was held by another process for \(lockTimeout) s; "
                        + "block \(index) of \(key.url) not kept")
            }
            throw failure.error("'\(path)'", context: "block cache \(folder)", code: .ioFailed)
        }
        CacheFolderCalls.touch(path: path)
        let written = Int64(BlockHeader.size + bytes.count)
        let used: Int64
        if let counted = lock.counter(magic: Self.counterMagic) {
            used = max(0, counted + written - replaced)
        } else {
            used = scan().total
        }
        if used > sizeLimit {
            let target = max(0, sizeLimit - max(sizeLimit / 16, written))
            lock.setCounter(evict(toBytes: target, keeping: path), magic: Self.counterMagic)
        } else {
            lock.setCounter(used, magic: Self.counterMagic)
        }
    }

    /// Makes the object's folder (and its description file); when the folder is new,
    /// removes the other versions of the object.
    private func prepareObjectFolder(_ key: ObjectKey, version: [UInt8]) throws(BlobStreamError) -> String {
        if case .failure(let failure) = CacheFolderCalls.makeFolderAbove(folder, mode: 0o700) {
            throw failure.error("'\(folder)'", context: "block cache", code: .ioFailed)
        }
        let urlFolder = folder + "/" + urlDigest(key.url, key.serverOrigin)
        let objectFolder = urlFolder + "/" + Self.hex(version)
        for path in [urlFolder, objectFolder] {
            switch CacheFolderCalls.makeFolder(path) {
            case .success(true) where path == objectFolder:
                removeOtherVersions(in: urlFolder, keeping: Self.hex(version))
            case .success: break
            case .failure(let failure):
                throw failure.error("'\(path)'", context: "block cache \(folder)", code: .ioFailed)
            }
        }
        let description = objectFolder + "/" + Self.descriptionName
        if CacheFolderCalls.linkStatus(description)?.kind != .regular {
            CacheFolderCalls.removeTree(description)
            if let json = try? JSONEncoder().encode(key) {
                _ = [UInt8](json).withUnsafeBytes { AtomicFileWrite.write($0, to: description, mode: 0o600) }
            }
        }
        return objectFolder
    }

    /// Removes every version folder in `urlFolder` but `keeping`, under the lock.
    private func removeOtherVersions(in urlFolder: String, keeping: String) {
        let others = CacheFolderCalls.entries(of: urlFolder).filter { $0.name != keeping }
        guard !others.isEmpty else { return }
        withLock(timeout: lockTimeout) { counted in
            var removed: Int64 = 0
            for other in others { removed += CacheFolderCalls.removeTree(urlFolder + "/" + other.name) }
            return counted.map { max(0, $0 - removed) }
        }
    }

    // MARK: Pruning

    /// Removes the least recently used blocks until the block files take at most `bytes`;
    /// also removes what does not belong (files at block names that are not regular files,
    /// temporary files a killed writer left, empty object folders). Files the cache did not
    /// name are left alone.
    public func prune(toBytes bytes: Int64) {
        withLock { _ in evict(toBytes: max(0, bytes), keeping: nil) }
    }

    /// Removes every block of every version of the object at `url` (read from
    /// `serverOrigin`).
    public func dropObject(url: String, serverOrigin: String? = nil) {
        let urlFolder = folder + "/" + urlDigest(url, serverOrigin)
        guard CacheFolderCalls.linkStatus(urlFolder) != nil else { return }
        withLock { counted in
            let removed = CacheFolderCalls.removeTree(urlFolder)
            return counted.map { max(0, $0 - removed) }
        }
    }

    /// What the folder holds now (read without the lock: a writer may be changing it).
    public func contents() -> Summary {
        let found = scan()
        var objects: [String: Summary.Object] = [:]
        for block in found.blocks {
            objects[block.objectFolder, default: Summary.Object(key: nil, blocks: 0, bytes: 0)].blocks += 1
            objects[block.objectFolder, default: Summary.Object(key: nil, blocks: 0, bytes: 0)].bytes += block.size
        }
        for objectFolder in objects.keys {
            objects[objectFolder]?.key = describedKey(objectFolder)
        }
        return Summary(
            objects: objects.values.sorted { ($0.bytes, $0.key?.url ?? "") > ($1.bytes, $1.key?.url ?? "") },
            totalBytes: found.total, sizeLimit: sizeLimit, folder: folder)
    }

    /// The key the object folder's description file gives, when it names that folder.
    private func describedKey(_ objectFolder: String) -> ObjectKey? {
        let path = objectFolder + "/" + Self.descriptionName
        guard case .success(let file) = SystemFile.openForReading(path, nonBlocking: true, followsLinks: false) else {
            return nil
        }
        defer { file.close() }
        guard case .success(let status) = file.status(), status.kind == .regular, status.size < 1 << 16 else {
            return nil
        }
        let count = Int(status.size)
        var bytes = [UInt8](repeating: 0, count: count)
        guard
            case .success(count) = bytes.withUnsafeMutableBytes({
                file.readFully(into: $0.baseAddress!, count: count, at: 0)
            }),
            let key = try? JSONDecoder().decode(ObjectKey.self, from: Data(bytes)),
            objectFolder.hasSuffix("/" + Self.hex(versionDigest(key)))
        else { return nil }
        return key
    }

    // MARK: The folder's layout

    /// `lock` at the top of the folder: the writers' lock, and the bytes counted.
    static let lockName = "lock"
    /// The description of an object, in its folder (JSON of its key).
    static let descriptionName = "object.json"
    /// "BSBCUSE1": the lock file's counter is valid.
    static let counterMagic: UInt64 = 0x3145_5355_4342_5342

    /// The file name of block `index`: 16 hex digits and `.blk`.
    static func blockName(_ index: Int) -> String {
        let digits = String(UInt64(index), radix: 16)
        return String(repeating: "0", count: max(0, 16 - digits.count)) + digits + ".blk"
    }

    static func isBlockName(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        return utf8.count == 20 && name.hasSuffix(".blk") && utf8[..<16].allSatisfy(isHexDigit)
    }

    private static func isHexDigit(_ c: UInt8) -> Bool { (0x30...0x39).contains(c) || (0x61...0x66).contains(c) }

    private static func isDigestName(_ name: String, length: Int) -> Bool {
        name.utf8.count == length && name.utf8.allSatisfy(isHexDigit)
    }

    /// The path of block `index` of the object.
    func blockPath(_ key: ObjectKey, version: [UInt8], block index: Int) -> String {
        folder + "/" + urlDigest(key.url, key.serverOrigin) + "/" + Self.hex(version) + "/" + Self.blockName(index)
    }

    /// The folder of the object's blocks, for tests.
    package func objectFolder(_ key: ObjectKey) -> String {
        folder + "/" + urlDigest(key.url, key.serverOrigin) + "/" + Self.hex(versionDigest(key))
    }

    /// The path of block `index` of the object, for tests.
    package func blockPath(_ key: ObjectKey, block index: Int) -> String {
        blockPath(key, version: versionDigest(key), block: index)
    }

    /// SHA-256 of the object's version (its URL, server, ETag and size, and the block size,
    /// each field preceded by its length): what its blocks' headers carry.
    func versionDigest(_ key: ObjectKey) -> [UInt8] {
        var hasher = SHA256()
        let fields = [
            "blobstream block cache 1", key.url, key.serverOrigin ?? "", key.entityTag, String(key.size),
            String(blockSize),
        ]
        for field in fields {
            hasher.update(data: Array("\(field.utf8.count):".utf8))
            hasher.update(data: Array(field.utf8))
        }
        return Array(hasher.finalize())
    }

    /// 128 bits of SHA-256 of the URL and server, in hex: the folder of every version of
    /// the object.
    private func urlDigest(_ url: String, _ serverOrigin: String?) -> String {
        let text = "\(url.utf8.count):\(url)\((serverOrigin ?? "").utf8.count):\(serverOrigin ?? "")"
        return Self.hex(Array(SHA256.hash(data: Array(text.utf8)).prefix(16)))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    // MARK: The lock, the scan, the eviction

    private func openLock() throws(BlobStreamError) -> CounterLockFile {
        let path = folder + "/" + Self.lockName
        do {
            return try CounterLockFile(path: path)
        } catch {
            // Something other than a regular file at its name: removed once, then made again.
            if CacheFolderCalls.linkStatus(path).map({ $0.kind != .regular }) ?? false {
                CacheFolderCalls.removeTree(path)
                if let lock = try? CounterLockFile(path: path) { return lock }
            }
            throw error.error("'\(path)'", context: "block cache \(folder)", code: .ioFailed)
        }
    }

    /// Runs `body` holding the writers' lock, with the bytes counted (nil: not known); keeps
    /// what it returns as the count (nil: forgets it, the next writer counts again).
    private func withLock(timeout: Double? = nil, _ body: (Int64?) -> Int64?) {
        guard CacheFolderCalls.linkStatus(folder) != nil, let lock = try? openLock(),
            timeout.map({ lock.lock(timeout: $0) }) ?? lock.lock()
        else { return }
        defer { lock.unlock() }
        if let counted = body(lock.counter(magic: Self.counterMagic)) {
            lock.setCounter(counted, magic: Self.counterMagic)
        } else {
            lock.setCounter(0, magic: 0)
        }
    }

    private struct Found {
        var blocks: [(path: String, objectFolder: String, size: Int64, used: BlobContentIdentity.Timestamp)] = []
        var total: Int64 = 0
    }

    /// Every block file in the folder (`lstat`, no link followed). Removes on the way what is at
    /// a block name and not a regular file, and the temporary files of killed writers
    /// (`AtomicFileWrite`'s, untouched for its stale time).
    private func scan() -> Found {
        var found = Found()
        let now = CacheFolderCalls.currentTime
        for urlEntry in CacheFolderCalls.entries(of: folder)
        where urlEntry.kind == .directory && Self.isDigestName(urlEntry.name, length: 32) {
            let urlFolder = folder + "/" + urlEntry.name
            for versionEntry in CacheFolderCalls.entries(of: urlFolder)
            where Self.isDigestName(versionEntry.name, length: 64) {
                let objectFolder = urlFolder + "/" + versionEntry.name
                guard versionEntry.kind == .directory else {
                    CacheFolderCalls.removeTree(objectFolder)
                    continue
                }
                for entry in CacheFolderCalls.entries(of: objectFolder) {
                    let path = objectFolder + "/" + entry.name
                    if Self.isBlockName(entry.name) {
                        if entry.kind == .regular {
                            found.blocks.append((path, objectFolder, entry.size, entry.modified))
                            found.total += entry.size
                        } else {
                            CacheFolderCalls.removeTree(path)
                        }
                    } else if entry.name.hasPrefix("."), entry.name.contains(AtomicFileWrite.marker),
                        entry.kind == .regular,
                        now - Int(entry.modified.seconds) >= AtomicFileWrite.staleAfterSeconds
                    {
                        CacheFolderCalls.removeTree(path)
                    }
                }
            }
        }
        return found
    }

    /// Removes the least recently used blocks (never `keeping`) until the rest take at most
    /// `bytes`, then the object folders left with no block; the bytes left.
    private func evict(toBytes bytes: Int64, keeping: String?) -> Int64 {
        var found = scan()
        found.blocks.sort {
            ($0.used.seconds, $0.used.nanoseconds, $0.path) < ($1.used.seconds, $1.used.nanoseconds, $1.path)
        }
        var total = found.total
        var emptied = Set<String>()
        for block in found.blocks where total > bytes && block.path != keeping {
            CacheFolderCalls.removeTree(block.path)
            total -= block.size
            emptied.insert(block.objectFolder)
        }
        for objectFolder in emptied
        where !CacheFolderCalls.entries(of: objectFolder).contains(where: { Self.isBlockName($0.name) }) {
            CacheFolderCalls.removeTree(objectFolder)
            let urlFolder = String(objectFolder[..<objectFolder.lastIndex(of: "/")!])
            if CacheFolderCalls.entries(of: urlFolder).isEmpty { CacheFolderCalls.removeTree(urlFolder) }
        }
        return total
    }
}

/// The 64 bytes before a block's payload, little-endian: magic `BSBLOCK1`, format version (1),
/// payload length, the SHA-256 of the object's version, the block's index, the payload's
/// CRC-32C, and the CRC-32C of the 60 bytes before it.
struct BlockHeader {
    static let size = 64
    static let magic: UInt64 = 0x314B_434F_4C42_5342 // "BSBLOCK1"
    static let formatVersion: UInt32 = 1

    var version: [UInt8]
    var blockIndex: UInt64
    var payloadLength: UInt32
    var payloadCRC: UInt32

    init(version: [UInt8], blockIndex: UInt64, payloadLength: UInt32, payloadCRC: UInt32) {
        self.version = version
        self.blockIndex = blockIndex
        self.payloadLength = payloadLength
        self.payloadCRC = payloadCRC
    }

    /// Reads the header at the start of `bytes`; nil when its magic, format or own CRC is wrong.
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= Self.size else { return nil }
        func word<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            var value: T = 0
            for i in 0..<MemoryLayout<T>.size { value |= T(bytes[offset + i]) << (8 * i) }
            return value
        }
        guard word(0, UInt64.self) == Self.magic, word(8, UInt32.self) == Self.formatVersion,
            word(60, UInt32.self) == CRC32C.update(0, Array(bytes[0..<60]))
        else { return nil }
        payloadLength = word(12, UInt32.self)
        version = Array(bytes[16..<48])
        blockIndex = word(48, UInt64.self)
        payloadCRC = word(56, UInt32.self)
    }

    func encoded() -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(Self.size)
        func append<T: FixedWidthInteger>(_ value: T) {
            for i in 0..<MemoryLayout<T>.size { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * i))) }
        }
        append(Self.magic)
        append(Self.formatVersion)
        append(payloadLength)
        bytes.append(contentsOf: version)
        append(blockIndex)
        append(payloadCRC)
        append(CRC32C.update(0, bytes))
        return bytes
    }
}
