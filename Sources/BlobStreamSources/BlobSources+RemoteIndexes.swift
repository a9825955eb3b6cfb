import BlobStream
import BlobStreamArchive
import BlobStreamCompression
import BlobStreamSystem
import BlobStreamZstd
import Foundation

// Indexes of remote objects (on a store, or a web server's file with a strong ETag), built
// by reading the object through its ranged source and kept beside it, where named, or in the
// index cache: what `blobstream index URL` does, from the library.
extension BlobSources {
    /// An index of a remote object, bound to the object's size and strong ETag.
    public enum BuiltIndex: Sendable {
        /// A member index (a tar, a zip, a tar.zst with its frames, or a tar.gz with its gzip
        /// seek points inside).
        case archive(ArchiveIndex)
        /// The seek points of a gzip object that holds no tar (or was asked for as gzip).
        case gzip(GzipIndex)
        /// The frames of a zstd object in many frames that holds no tar.
        case zstd(ZstdFrameIndex)
    }

    /// What an index of a file or a remote object is built as.
    public enum IndexKind: Sendable, Equatable {
        /// As the first bytes say: a member index for a tar, a zip, or a gzip or zstd stream
        /// whose first decompressed header is a tar's; a frame index for another zstd stream
        /// (of many frames: one of a single frame is refused); gzip seek points for any other
        /// gzip.
        case whatItHolds
        /// Gzip seek points, whatever the gzip holds.
        case gzip
        /// Zstd frames, whatever the zstd stream holds.
        case zstdFrames
    }

    /// An index written somewhere: where, and what it holds.
    public struct KeptIndex: Sendable, Equatable {
        /// The path or URL it was written to.
        public var location: String
        /// What it holds: `10003 members (tar.gz)`, `256 seek points`.
        public var contents: String
        /// Its size in bytes.
        public var byteCount: Int
    }

    /// Builds the index of the object at `url` (`s3:`, `http(s):` with a strong ETag) by
    /// reading it through the remote schemes' ranged sources, pinned to its ETag: a change
    /// mid-way fails the build. Blocks until done (run it off the cooperative pool).
    ///
    /// - Returns: the index, and the server the object was read from (part of the index
    ///   cache's key).
    /// - Throws: `BlobStreamError` naming `url`: `.unsupported` when the server sends no
    ///   strong ETag or the object is no format that can be indexed; the source's errors.
    public func buildIndex(
        ofObjectAt url: String, as kind: IndexKind = .whatItHolds, gzipSpacing: Int = GzipIndex.defaultSpacing
    ) throws(BlobStreamError) -> (index: BuiltIndex, serverOrigin: String?) {
        let registry = makeRegistry(readingContentFor: .indexBuild)
        let held: RemoteContent.Held
        switch kind {
        case .whatItHolds: held = try RemoteContent.held(url, registry: registry)
        case .gzip: held = .gzip
        case .zstdFrames: held = .zstdFrames
        }
        if held == .zstdFrames {
            let object = try RemoteContent.rangedSource(url, registry: registry)
            object.open()
            defer { object.close() }
            guard let identity = try object.contentIdentity() else {
                throw BlobStreamError(
                    .unsupported,
                    "cannot index \(url): the server sends no strong ETag, so no index could be checked against it later"
                )
            }
            let pass = try RemoteContent.rangedSource(url, registry: registry)
            let index = try ZstdFrameIndex.build(source: pass, name: url, identity: identity, windowLog: zstdWindowLog)
            return (.zstd(index), object.serverOrigin)
        }
        if held == .archive {
            var origin: String?
            let index = try RemoteContent.typed(url) {
                try ArchiveIndex.build(
                    archiveNamed: url,
                    makeSource: {
                        let made = try registry.makeSource(url: url)
                        origin = (made as? any BlobRangeReading)?.serverOrigin ?? origin
                        return made
                    }, gzipSpacing: gzipSpacing, engine: inflate)
            }
            return (.archive(index), origin)
        }
        let object = try RemoteContent.rangedSource(url, registry: registry)
        object.open()
        guard let identity = try object.contentIdentity() else {
            object.close()
            throw BlobStreamError(
                .unsupported,
                "cannot index \(url): the server sends no strong ETag, so no index could be checked against it later")
        }
        var index = try GzipIndex.build(from: object, spacing: gzipSpacing, name: url, engine: inflate)
        index.identity = identity
        return (.gzip(index), object.serverOrigin)
    }

    /// Writes `index`, the index of the object at `url`: into `indexCache` when there is one,
    /// else to `destination` (a path or an `s3:` URL), else beside the object
    /// (`URL.blobidx`; a tar.gz's seek points also to `URL.gzidx`, which `gzip:` sources
    /// read). With `indexKey`, each is sealed with it (`IndexSeal`).
    ///
    /// - Throws: `BlobStreamError` naming where: `.unsupported` for a web server's URL (it
    ///   takes no index; name a path or an `s3:` URL), the store's refusal, the file's error.
    public func keep(
        _ index: BuiltIndex, of url: String, serverOrigin: String? = nil, at destination: String? = nil
    ) async throws(BlobStreamError) -> [KeptIndex] {
        switch index {
        case .gzip(let gzipIndex):
            guard let identity = gzipIndex.identity else {
                throw BlobStreamError(.unsupported, "the index of \(url) records no identity of the object")
            }
            let bytes = gzipIndex.sealing(gzipIndex.serialized(), with: indexKey)
            let contents = "\(gzipIndex.points.count) seek points"
            let location = try await keep(
                bytes, kind: .gzip, of: url, identity: identity, serverOrigin: serverOrigin,
                at: destination ?? GzipIndex.sidecar(of: url))
            return [KeptIndex(location: location, contents: contents, byteCount: bytes.count)]
        case .zstd(let zstdIndex):
            let bytes = zstdIndex.sealing(zstdIndex.encoded(), with: indexKey)
            let location = try await keep(
                bytes, kind: .zstd, of: url, identity: zstdIndex.identity, serverOrigin: serverOrigin,
                at: destination ?? ZstdFrameIndex.sidecar(of: url))
            let frames = zstdIndex.frames.frames.filter { $0.decompressedSize > 0 }.count
            return [KeptIndex(location: location, contents: "\(frames) frames", byteCount: bytes.count)]
        case .archive(let archiveIndex):
            let bytes = archiveIndex.sealing([UInt8](archiveIndex.encoded()), with: indexKey)
            let location = try await keep(
                bytes, kind: .archive, of: url, identity: archiveIndex.identity, serverOrigin: serverOrigin,
                at: destination ?? ArchiveIndex.sidecar(of: url))
            var kept = [
                KeptIndex(
                    location: location,
                    contents: "\(archiveIndex.members.count) members (\(archiveIndex.format.name))",
                    byteCount: bytes.count)
            ]
            // Beside the archive, a tar.gz's seek points go to URL.gzidx too.
            if destination == nil, let gzipIndex = archiveIndex.gzipIndex {
                let bytes = gzipIndex.sealing(gzipIndex.serialized(), with: indexKey)
                let location = try await keep(
                    bytes, kind: .gzip, of: url, identity: archiveIndex.identity, serverOrigin: serverOrigin,
                    at: GzipIndex.sidecar(of: url))
                kept.append(
                    KeptIndex(
                        location: location, contents: "\(gzipIndex.points.count) seek points", byteCount: bytes.count))
            }
            return kept
        }
    }

    /// Writes one index's bytes into the cache, or to `destination`; returns where.
    private func keep(
        _ bytes: [UInt8], kind: IndexCache.Kind, of url: String, identity: BlobContentIdentity, serverOrigin: String?,
        at destination: String
    ) async throws(BlobStreamError) -> String {
        if let indexCache {
            return try indexCache.keep(
                bytes, forSourceAt: url, serverOrigin: serverOrigin, identity: identity, kind: kind)
        }
        if Self.namesTheSameObject(destination, url) {
            throw BlobStreamError(
                .unsupported,
                "cannot write the index of \(url) to \(destination): that is the object indexed, which the index would replace; name another place"
            )
        }
        switch BlobURL.scheme(of: destination)?.lowercased() {
        case "s3", "http", "https":
            guard let store = remote as? any DataSourceObjectStoring else {
                throw BlobStreamError(
                    .unsupported, "cannot write the index of \(url) to \(destination): no store is given")
            }
            do {
                try await store.store(bytes, at: destination)
            } catch {
                throw BlobStreamError(
                    error.code, "cannot write the index of \(url) to \(destination): \(error.message)", cause: error)
            }
        default:
            var path = destination
            if BlobURL.scheme(of: destination) != nil {
                do {
                    path = try BlobURL.path(ofFileURL: destination)
                } catch {
                    throw BlobStreamError(.malformedURL, "\(destination): \(error)", cause: error)
                }
            }
            try WriteDestination.check(path, role: "the \(kind.noun)")
            let written = bytes.withUnsafeBytes { AtomicFileWrite.write($0, to: path) }
            if case .failure(let failure) = written {
                throw failure.error("a temporary file beside '\(path)'", context: "cannot write the \(kind.noun)")
            }
        }
        return destination
    }
}

extension BlobSources {
    /// Whether `destination` names the object at `url` itself (an index written there would
    /// replace what it indexes): the same URL once a leading `gzip:` and the scheme's case are
    /// set aside.
    package static func namesTheSameObject(_ destination: String, _ url: String) -> Bool {
        func plain(_ name: String) -> String {
            var name = Substring(name)
            while name.lowercased().hasPrefix("gzip:") || name.lowercased().hasPrefix("zstd:") {
                name = name.dropFirst(5)
            }
            guard let scheme = BlobURL.scheme(of: String(name)) else { return String(name) }
            return scheme.lowercased() + name.dropFirst(scheme.count)
        }
        return plain(destination) == plain(url)
    }
}

/// Telling what a remote object holds from its first bytes.
enum RemoteContent {
    /// What is read of an object's start to tell what it holds: enough for a gzip's first
    /// 512 inflated bytes, but for a gzip header with long extra fields.
    static let headLength = 64 << 10

    /// What an object holds, for its index.
    enum Held: Equatable {
        /// An archive to index for its members.
        case archive
        /// A zstd stream that holds no tar: its frames get an index.
        case zstdFrames
        /// Anything else: gzip seek points (or the gzip index build's error).
        case gzip
    }

    /// What the object at `url` holds: an archive to index for its members (a tar, with a
    /// header at its start; a zip, with a local header or an empty zip's end record; a gzip or
    /// a zstd stream whose first decompressed header is a tar's), a zstd stream of something
    /// else, or neither.
    static func held(_ url: String, registry: DataSourceRegistry) throws(BlobStreamError) -> Held {
        let head = try firstBytes(of: url, count: headLength, registry: registry)
        if ContentMagic(head: head) == .zstd {
            let source = try makeSource(url, registry: registry)
            (source as? any BlobRangeReading)?.expectRead(0..<Int64(headLength))
            return ArchiveIndex.zstdHoldsTar(source: source, name: url) ? .archive : .zstdFrames
        }
        return try isArchive(head: head, url, registry: registry) ? .archive : .gzip
    }

    /// Whether the object whose first bytes are `head` is an archive to index for its members.
    private static func isArchive(head: [UInt8], _ url: String, registry: DataSourceRegistry) throws(BlobStreamError)
        -> Bool
    {
        switch ContentMagic(head: head) {
        case .gzip:
            if let holdsTar = inflatedHeaderIsTar(head) { return holdsTar }
            // The first tar header is not in the head (a long gzip header): read on, small
            // first block, no blocks ahead (the index build reads the object next).
            let source = try makeSource(url, registry: registry)
            (source as? any BlobRangeReading)?.expectRead(0..<Int64(headLength))
            return ArchiveIndex.gzipHoldsTar(source: source, name: url)
        case .zip, .tar: return true
        case .zstd, .xz, .unknown: return false
        }
    }

    /// Whether the first 512 bytes `head` (a gzip's first bytes) inflates to are a tar
    /// header; nil when it does not hold that many.
    private static func inflatedHeaderIsTar(_ head: [UInt8]) -> Bool? {
        let sink = InflatedPrefix()
        _ = try? GzipIndex.build(
            from: DataBytesSource(Data(head)), spacing: 1 << 30, name: "the object's head", engine: .automatic,
            onOutput: sink.take)
        // The head ends (it is only the start of the object) or is not gzip: what was
        // inflated before tells, or nothing does.
        guard sink.bytes.count == 512 else { return nil }
        return sink.bytes[257..<262].elementsEqual("ustar".utf8)
    }

    /// The first 512 inflated bytes, then a stop.
    private final class InflatedPrefix {
        var bytes: [UInt8] = []
        func take(_ more: UnsafeRawBufferPointer) throws(BlobStreamError) {
            bytes += more.prefix(512 - bytes.count)
            if bytes.count == 512 { throw BlobStreamError(.sourceFailed, "the first 512 bytes are in") }
        }
    }

    /// Up to `count` bytes at the start of the object (fewer when it is shorter).
    static func firstBytes(of url: String, count: Int, registry: DataSourceRegistry) throws(BlobStreamError)
        -> [UInt8]
    {
        let object = try rangedSource(url, registry: registry)
        defer { object.close() }
        object.expectRead(0..<Int64(count)) // a first answer of these bytes only
        object.open()
        _ = try object.contentIdentity() // waits for the first answer (the length)
        let length = object.length ?? 0
        guard length > 0 else { return [] }
        return [UInt8](try object.bytes(at: [0..<min(length, Int64(count))]).first ?? Data())
    }

    /// The source of `url`, not opened.
    static func makeSource(_ url: String, registry: DataSourceRegistry) throws(BlobStreamError) -> any BlobDataSource {
        do {
            return try registry.makeSource(url: url)
        } catch {
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed, "cannot index \(url): \(error)", cause: error)
        }
    }

    /// The source of `url`, not opened, read by range.
    static func rangedSource(_ url: String, registry: DataSourceRegistry) throws(BlobStreamError)
        -> any BlobRangeReading
    {
        let made = try makeSource(url, registry: registry)
        guard let object = made as? any BlobRangeReading else {
            made.close()
            throw BlobStreamError(.unsupported, "cannot index \(url): its source cannot be read by range")
        }
        return object
    }

    /// `body`'s result; its error as a `BlobStreamError` that says the object cannot be indexed.
    static func typed<T>(_ url: String, _ body: () throws -> T) throws(BlobStreamError) -> T {
        do {
            return try body()
        } catch let error as BlobStreamError {
            throw error
        } catch {
            throw BlobStreamError(.sourceFailed, "cannot index \(url): \(error)", cause: error)
        }
    }
}
