import BlobStream
import BlobStreamAssets
import Foundation

/// An in-memory library whose invalidations are scripted: `invalidate(atOffsets:)` makes the
/// next `getBytes` at each of those offsets invalidate every representation handed out
/// (once per listed offset), `invalidateAll()` does it at once, `replace` changes an asset's
/// bytes (and invalidates).
final class TestLibrary: AssetLibrary, @unchecked Sendable {
    // Unchecked Sendable: every mutable field is guarded by `lock`.
    let callbackQueue = DispatchQueue(label: "TestLibrary.callback")
    private let lock = NSLock()
    private var assets: [String: (ext: String, original: Data, edited: Data?)] = [:]
    private var generation = 0
    private var triggers: [Int64] = []
    private var alwaysInvalid = false
    private var _lookups = 0
    private var _getBytes = 0
    /// Whether fingerprints are only the size, like a library that knows a file only by
    /// its size and modification time (which a rewrite can keep).
    let sizeOnlyFingerprints: Bool

    init(sizeOnlyFingerprints: Bool = false) { self.sizeOnlyFingerprints = sizeOnlyFingerprints }

    /// Adds an asset; returns its URL.
    @discardableResult
    func add(id: String, ext: String = "JPG", original: Data, edited: Data? = nil) -> String {
        lock.withLock { assets[id] = (ext, original, edited) }
        return AssetURL(id: id, ext: ext).string
    }

    /// Replaces the bytes of an asset (nil removes it) and invalidates.
    func replace(id: String, original: Data?, edited: Data? = nil) {
        lock.withLock {
            if let original { assets[id] = (assets[id]?.ext ?? "JPG", original, edited) } else { assets[id] = nil }
            generation += 1
        }
    }

    /// Invalidates every representation handed out.
    func invalidateAll() { lock.withLock { generation += 1 } }

    /// The next `getBytes` at each offset (a multiple of the block size: that is where
    /// sources ask) invalidates first; an offset listed twice does it twice in a row.
    func invalidate(atOffsets offsets: [Int64]) { lock.withLock { triggers += offsets } }

    /// Every `getBytes` says invalidated from now on.
    func invalidateForever() { lock.withLock { alwaysInvalid = true } }

    /// Every `getBytes` from now on takes `microseconds` more (a slow disk).
    func slowDown(_ microseconds: UInt32) { lock.withLock { delay = microseconds } }
    private var delay: UInt32 = 0

    var lookups: Int { lock.withLock { _lookups } }
    var getBytesCalls: Int { lock.withLock { _getBytes } }

    func asset(for url: String, completion: @escaping @Sendable (Result<Asset, any Error>) -> Void) {
        callbackQueue.async {
            completion(Result { try self.lookUp(url) })
        }
    }

    private func lookUp(_ url: String) throws -> Asset {
        let parsed = try AssetURL(parsing: url)
        return try lock.withLock {
            _lookups += 1
            guard let entry = assets[parsed.id] else {
                throw BlobStreamError(.notFound, "no asset '\(url)' in the test library")
            }
            let original = TestRepresentation(
                library: self, generation: generation, data: entry.original, rendition: .original,
                name: "\(parsed.id).\(entry.ext)")
            let edited = entry.edited.map {
                TestRepresentation(
                    library: self, generation: generation, data: $0, rendition: .edited,
                    name: "\(parsed.id).\(entry.ext)")
            }
            return Asset(url: url, id: parsed.id, original: original, edited: edited)
        }
    }

    /// Throws `.invalidated` when `generation` is stale or a trigger fires at `offset`.
    fileprivate func check(generation: Int, offset: Int64) throws {
        let delay = lock.withLock { self.delay }
        if delay > 0 { usleep(delay) } // the point: a slow library (slowDown)
        try lock.withLock {
            _getBytes += 1
            if alwaysInvalid {
                throw BlobStreamError(.invalidated, "invalidated (forever)")
            }
            if let i = triggers.firstIndex(of: offset) {
                triggers.remove(at: i)
                self.generation += 1
            }
            if generation != self.generation {
                throw BlobStreamError(.invalidated, "invalidated at offset \(offset)")
            }
        }
    }
}

/// Uses the protocol's default `checkValid()` (a `getBytes` at `size`).
final class TestRepresentation: AssetRepresentation, @unchecked Sendable {
    // Unchecked Sendable: immutable.
    let library: TestLibrary
    let generation: Int
    let data: Data
    let rendition: AssetRendition
    let filename: String
    var size: Int64 { Int64(data.count) }
    var uti: String { "public.jpeg" }
    var fingerprint: String { library.sizeOnlyFingerprints ? "\(data.count)" : "\(data.count):\(data.hashValue)" }

    init(library: TestLibrary, generation: Int, data: Data, rendition: AssetRendition, name: String) {
        self.library = library
        self.generation = generation
        self.data = data
        self.rendition = rendition
        self.filename = name
    }

    func getBytes(into buffer: UnsafeMutableRawPointer, fromOffset offset: Int64, length: Int) throws -> Int {
        try library.check(generation: generation, offset: offset)
        let n = max(0, min(length, data.count - Int(offset)))
        data.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + Int(offset), byteCount: n) }
        return n
    }
}

/// Wraps any library and records the `getBytes` calls made on the representations it hands
/// out (offset, length, destination), and counts the lookups.
final class CountingLibrary: AssetLibrary, @unchecked Sendable {
    // Unchecked Sendable: the counters are guarded by `lock`.
    let inner: any AssetLibrary
    private let lock = NSLock()
    private var _calls: [GetBytesCall] = []
    private var _lookups = 0
    init(_ inner: any AssetLibrary) { self.inner = inner }

    /// One `getBytes` call; `destination` is the buffer's address.
    struct GetBytesCall: Equatable {
        let offset: Int64, length: Int, destination: UInt
    }

    var callbackQueue: DispatchQueue { inner.callbackQueue }
    var getBytesCalls: Int { lock.withLock { _calls.count } }
    var calls: [GetBytesCall] { lock.withLock { _calls } }
    var lookups: Int { lock.withLock { _lookups } }
    fileprivate func counted(_ call: GetBytesCall) { lock.withLock { _calls.append(call) } }

    func asset(for url: String, completion: @escaping @Sendable (Result<Asset, any Error>) -> Void) {
        lock.withLock { _lookups += 1 }
        inner.asset(for: url) { result in
            completion(
                result.map { asset in
                    Asset(
                        url: asset.url, id: asset.id, original: Counted(asset.original, self),
                        edited: asset.edited.map { Counted($0, self) })
                })
        }
    }

    final class Counted: AssetRepresentation, @unchecked Sendable {
        // Unchecked Sendable: immutable.
        let inner: any AssetRepresentation
        let owner: CountingLibrary
        init(_ inner: any AssetRepresentation, _ owner: CountingLibrary) {
            self.inner = inner
            self.owner = owner
        }
        var size: Int64 { inner.size }
        var filename: String { inner.filename }
        var uti: String { inner.uti }
        var rendition: AssetRendition { inner.rendition }
        var fingerprint: String { inner.fingerprint }
        func checkValid() throws { try inner.checkValid() } // not a getBytes
        func getBytes(into buffer: UnsafeMutableRawPointer, fromOffset offset: Int64, length: Int) throws -> Int {
            owner.counted(.init(offset: offset, length: length, destination: UInt(bitPattern: buffer)))
            return try inner.getBytes(into: buffer, fromOffset: offset, length: length)
        }
    }
}
