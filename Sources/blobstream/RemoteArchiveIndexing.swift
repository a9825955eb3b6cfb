import BlobStream
import BlobStreamArchive
import BlobStreamCLI
import BlobStreamCompression
import Foundation

/// `blobstream index URL` for an archive on a store (`s3://`) or a web server (`http(s)://`
/// with a strong ETag): a tar, a zip, or a gzip that holds a tar gets a member index, built by
/// reading the object through ranged sources (pinned to its ETag, so a change mid-way fails
/// the build), recording its size and ETag, written beside it (`s3://bucket/KEY.blobidx`; a
/// tar.gz's seek points also go to `KEY.gzidx`) or where `--output` says.
enum RemoteArchiveIndexing {
    /// Whether the object at `url` is an archive to index for its members: a tar (a header
    /// at its start), a zip (a local header or an empty zip's end record), or a gzip whose
    /// first inflated header is a tar's.
    static func isArchive(_ url: String, registry: DataSourceRegistry) async throws -> Bool {
        try await RemoteGzipIndexing.offThread { () throws -> Bool in
            let head = try firstBytes(of: url, count: headLength, registry: registry)
            if head.starts(with: [0x1F, 0x8B]) {
                if let holdsTar = inflatedHeaderIsTar(head) { return holdsTar }
                // The first tar header is not in the head (a long gzip header): read on,
                // small first block, no blocks ahead (the index build reads the object next).
                let source = try registry.makeSource(url: url)
                (source as? any BlobRangeReading)?.expectRead(0..<Int64(headLength))
                return ArchiveIndex.gzipHoldsTar(source: source, name: url)
            }
            if head.starts(with: [0x50, 0x4B, 0x03, 0x04]) || head.starts(with: [0x50, 0x4B, 0x05, 0x06]) {
                return true
            }
            return head.count >= 512 && head[257..<262].elementsEqual("ustar".utf8)
        }
    }

    /// What is read of an object's start to tell what it holds: enough for a gzip's first
    /// 512 inflated bytes, but for a gzip header with long extra fields.
    private static let headLength = 64 << 10

    /// Whether the first 512 bytes `head` (a gzip's first bytes) inflates to are a tar
    /// header; nil when it does not hold that many.
    private static func inflatedHeaderIsTar(_ head: [UInt8]) -> Bool? {
        var first: [UInt8] = []
        let enough = BlobStreamError(.sourceFailed, "the first 512 bytes are in")
        do {
            _ = try GzipIndex.build(
                from: DataBytesSource(Data(head)), spacing: 1 << 30, name: "the object's head", engine: .automatic,
                onOutput: { (bytes: UnsafeRawBufferPointer) throws(BlobStreamError) in
                    first += bytes.prefix(512 - first.count)
                    if first.count == 512 { throw enough }
                })
        } catch {
            // The head ends (it is only the start of the object) or is not gzip: what was
            // inflated before tells, or nothing does.
        }
        guard first.count == 512 else { return nil }
        return first[257..<262].elementsEqual("ustar".utf8)
    }

    /// Up to `count` bytes at the start of the object (fewer when it is shorter).
    private static func firstBytes(of url: String, count: Int, registry: DataSourceRegistry) throws -> [UInt8] {
        let made: any BlobDataSource
        do {
            made = try registry.makeSource(url: url)
        } catch {
            throw ToolFailure(message: "cannot index \(url): \(error)")
        }
        defer { made.close() }
        guard let object = made as? any BlobRangeReading else {
            throw ToolFailure(message: "cannot index \(url): its source cannot be read by range")
        }
        object.expectRead(0..<Int64(count)) // a first answer of these bytes only
        object.open()
        _ = try object.contentIdentity() // waits for the first answer (the length)
        let length = object.length ?? 0
        guard length > 0 else { return [] }
        return [UInt8](try object.bytes(at: [0..<min(length, Int64(count))]).first ?? Data())
    }

    /// Builds and writes the index; returns the lines to print (where, members, bytes).
    static func run(
        _ url: String, output: String?, spacing: Int, cache: IndexCache?, registry: DataSourceRegistry,
        s3: S3SourceSettings
    ) async throws -> String {
        let (index, serverOrigin) = try await RemoteGzipIndexing.offThread { () throws -> (ArchiveIndex, String?) in
            // The server the archive is read from: part of the index cache's key.
            var origin: String?
            let index = try ArchiveIndex.build(
                archiveNamed: url,
                makeSource: {
                    let made = try registry.makeSource(url: url)
                    origin = (made as? any BlobRangeReading)?.serverOrigin ?? origin
                    return made
                }, gzipSpacing: spacing)
            return (index, origin)
        }
        let encoded = [UInt8](index.encoded())
        let destination: String
        if let cache {
            destination = try cache.keep(
                encoded, forSourceAt: url, serverOrigin: serverOrigin, identity: index.identity, kind: .archive)
        } else {
            destination = output ?? ArchiveIndex.sidecar(of: url)
            try await RemoteGzipIndexing.store(
                encoded, at: destination, for: url, named: output != nil, role: "the archive index", s3: s3)
        }
        var lines = ["\(destination)\t\(index.members.count) members (\(index.format.name))\t\(encoded.count) bytes"]
        // Beside the archive, a tar.gz's seek points go to KEY.gzidx too (gzip: sources use them).
        if output == nil, let gzipIndex = index.gzipIndex {
            let bytes = gzipIndex.serialized()
            var sidecar = GzipIndex.sidecar(of: url)
            if let cache {
                sidecar = try cache.keep(
                    bytes, forSourceAt: url, serverOrigin: serverOrigin, identity: index.identity, kind: .gzip)
            } else {
                try await RemoteGzipIndexing.store(
                    bytes, at: sidecar, for: url, named: false, role: "the gzip index", s3: s3)
            }
            lines.append("\(sidecar)\t\(gzipIndex.points.count) seek points\t\(bytes.count) bytes")
        }
        return lines.joined(separator: "\n")
    }
}
