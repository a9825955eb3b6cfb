import BlobStream
import Foundation

/// Lists the entries of an archive (any format libarchive reads), from a path or from any
/// upstream source, reading headers only: over an upstream that can seek the members'
/// bodies are skipped without being read.
///
/// ```swift
/// for entry in try ArchiveListing.entries(ofArchiveAt: "/tmp/photos.tar.gz") {
///     print(entry.path, entry.size ?? -1, entry.type, entry.mtime ?? "-")
/// }
/// ```
///
/// Names are UTF-8 whatever the process locale, as stored (a leading `./` kept); names
/// that are not UTF-8 keep their raw bytes in `ArchiveEntry.pathBytes`, and
/// `ArchiveEntry.escapedPath` spells any name so that an `archive:` URL reads it back. Errors
/// are `BlobStreamError`s naming the archive, as `ArchiveMemberDataSource` reports them
/// (`.truncated`, `.corrupt`, `.unsupported` for a 7-Zip archive over an upstream that
/// cannot seek, the upstream's code when it fails).
public enum ArchiveListing {
    /// The entries of the archive file at `path`: from its index `ARCHIVE.blobidx` beside
    /// it when that matches the archive (no header is read), from its headers otherwise.
    public static func entries(ofArchiveAt path: String) throws -> [ArchiveEntry] {
        try entries(ofArchiveAt: path, index: .automatic)
    }

    /// The entries of the archive file at `path`, from an index as `index` says
    /// (`.automatic`: the one beside it when it matches; `.index` and `.file`: refused with
    /// `.changed` when it does not match; `.none`: the headers).
    public static func entries(ofArchiveAt path: String, index: ArchiveIndexOption) throws -> [ArchiveEntry] {
        switch index {
        case .none: break
        case .automatic:
            let indexPath = ArchiveIndex.sidecar(of: path)
            if FileManager.default.fileExists(atPath: indexPath), let found = try? ArchiveIndex.read(from: indexPath),
                (try? found.check(againstFileAtPath: path)) != nil
            {
                return found.entries
            }
        case .index(let given):
            try given.check(againstFileAtPath: path)
            return given.entries
        case .file(let indexPath):
            let named = try ArchiveIndex.read(from: indexPath)
            try named.check(againstFileAtPath: path)
            return named.entries
        }
        return try entries(of: ArchiveFileSource(path: path), name: path)
    }

    /// The entries of the archive read from `upstream`, which is opened here and closed
    /// before returning. An asynchronous upstream is waited for (never on the thread where
    /// it announces: that fails with `.wouldDeadlock`).
    ///
    /// - Parameters:
    ///   - upstream: the archive's bytes, not opened yet.
    ///   - name: how errors name the archive; by default a description of the upstream.
    ///   - readingTarHeaders: for an uncompressed tar over an upstream that can seek, also
    ///     walk its headers (one more pass over them) for what libarchive does not give and
    ///     GNU tar shows (`tar -tv`): each entry's `tarTypeFlag`, a directory's size field,
    ///     and the owner and group that pax records set, a global header's included.
    public static func entries(
        of upstream: any BlobDataSource, name: String? = nil, readingTarHeaders: Bool = false
    ) throws -> [ArchiveEntry] {
        let prefix = "archive '\(name ?? ArchiveMemberDataSource.describe(upstream))'"
        let reader = LibArchiveInput.makeReader(upstream)
        defer { reader.close() }
        do {
            try reader.waitForOpen()
        } catch {
            if let upstreamError = upstream.error {
                throw ArchiveErrors.upstreamFailed(upstreamError, prefix: prefix, "failed to open")
            }
            // The reader's own: a wait that would deadlock, an open that did not complete.
            let own = error as? BlobStreamError ?? BlobStreamError(.sourceFailed, "\(error)")
            throw BlobStreamError(own.code, "\(prefix): listing: \(own.message)", cause: own.cause)
        }
        var details: [Int64: TarHeaderDetails] = [:]
        if readingTarHeaders, LibArchiveInput.canSeek(upstream), let length = upstream.length {
            details = TarHeaderDetails.read(from: reader, length: length)
        }
        let input = LibArchiveInput(reader: reader)
        var entries: [ArchiveEntry] = []
        do {
            let handle = try ArchiveHandle(input: input)
            defer { handle.free() }
            while let header = try handle.nextHeader() {
                if !details.isEmpty, handle.isUncompressedTar, let found = details[handle.headerPosition] {
                    entries.append(found.applied(to: header.entry))
                } else {
                    entries.append(header.entry)
                }
            }
        } catch {
            throw ArchiveErrors.translate(
                error, input: input, prefix: prefix, while: "listing (after \(entries.count) entries)")
        }
        return entries
    }
}

extension ArchiveMemberDataSource {
    /// The entries of the archive file at `path`. See `ArchiveListing`.
    public static func list(archive path: String) throws -> [ArchiveEntry] {
        try ArchiveListing.entries(ofArchiveAt: path)
    }

    /// The entries of the archive read from `upstream` (opened and closed here). See
    /// `ArchiveListing`.
    public static func list(archive upstream: any BlobDataSource, name: String? = nil) throws -> [ArchiveEntry] {
        try ArchiveListing.entries(of: upstream, name: name)
    }
}
