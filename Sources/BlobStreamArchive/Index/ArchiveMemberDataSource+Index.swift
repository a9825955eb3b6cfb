import BlobStream
import BlobStreamCompression
import BlobStreamSystem
import Foundation

/// Which member index an `ArchiveMemberDataSource` uses (see `ArchiveIndex`).
public enum ArchiveIndexOption: Sendable {
    /// The default: for an archive read by path (or by a `file:` URL), `ARCHIVE.blobidx`
    /// beside it when it matches the archive; for an archive on a store or a web server
    /// (see `useIndex(_:besideArchiveAt:makeSource:)`), `URL.blobidx` beside it when it
    /// matches its size and strong ETag. One that does not match, or cannot be read, is
    /// ignored (never used): the member is then found by walking the headers.
    case automatic
    /// No index, not even a zip's central directory: libarchive reads a zip (and walks
    /// or reads a tar's headers) as without one.
    case none
    /// This index; refused (`.changed`) when it does not match the archive. Over an upstream
    /// with no path (see `useIndex(_:archivePath:)`) the modification time cannot be
    /// compared: the size and the sampled bytes are.
    case index(ArchiveIndex)
    /// The index in this file; refused when it cannot be read or does not match.
    case file(String)
}

extension ArchiveMemberDataSource {
    /// Makes a source for `member` of the archive file at `path`, using `index` (see
    /// `ArchiveIndexOption`; by default `ARCHIVE.blobidx` beside it when it matches).
    public convenience init(
        archive path: String, member: String, verification: ArchiveVerification = .wholeArchive,
        index: ArchiveIndexOption
    ) {
        self.init(archive: path, member: member, verification: verification)
        options.index = index
    }

    /// Lets the source use an index of the archive file at `path` (its upstream's bytes),
    /// as `option` says. Call before `open()`.
    public func useIndex(_ option: ArchiveIndexOption, archivePath path: String?) {
        lock.lock()
        defer { lock.unlock() }
        options.index = option
        options.archivePath = path
    }

    /// Lets the source use an index of the archive at `url` on a store or a web server (its
    /// upstream, a `BlobRangeReading` source), as `option` says: with `.automatic`, the
    /// index object beside it (`ArchiveIndex.sidecar(of:)`, one small request
    /// through a source `makeSource` makes) when it matches the archive's size and strong
    /// ETag (with `cache`, a copy kept there is used with no request, and the one found
    /// beside the archive is kept). An index named (`.index`, `.file`) that was made for such an object is checked
    /// against its ETag; one made for a file, against its size and sampled bytes. Call
    /// before `open()`.
    public func useIndex(
        _ option: ArchiveIndexOption, besideArchiveAt url: String, cache: IndexCache? = nil,
        makeSource: @escaping @Sendable (String) throws -> any BlobDataSource
    ) {
        lock.lock()
        defer { lock.unlock() }
        options.index = option
        options.indexObjects = (url, cache, makeSource)
    }

    /// Uses only member indexes sealed with `key` (`IndexSeal`): one found beside the archive
    /// (or kept in the index cache) whose seal does not verify is ignored, as one that does
    /// not match is (the cache's copy removed); one named (`.file`, or read by
    /// `ArchiveSources`) is refused. An index given as a value (`.index`) is used as it is.
    /// nil (the default): a seal is set aside. Call before `open()`.
    public func useIndexKey(_ key: IndexKey?) {
        lock.lock()
        defer { lock.unlock() }
        options.indexKey = key
    }

    /// Sets the inflate engine (see `InflateEngine`) of the gzip layer of a tar.gz and
    /// of members inflated here (a tar.gz member read through an index, a zip deflate member
    /// read through an index): by default ISA-L when it loads, else zlib; `.isal` where ISA-L
    /// is unavailable fails the open with `.unsupported`. Call before `open()`.
    public func useInflateEngine(_ engine: InflateEngine) {
        lock.lock()
        defer { lock.unlock() }
        options.inflateEngine = engine
    }
}

/// The options of an `ArchiveMemberDataSource`, set before `open()`.
struct ArchiveMemberOptions {
    /// Which index to use (see `ArchiveIndexOption`).
    var index: ArchiveIndexOption = .automatic
    /// The archive's path, when it is read by path (for `.automatic`, a tar.xz read through
    /// its index and `storedRegion`).
    var archivePath: String?
    /// For an archive on a store or a web server (`BlobRangeReading`): its URL and how to
    /// make the source of its index object beside it (`useIndex(.automatic, besideArchiveAt:makeSource:)`).
    var indexObjects: (url: String, cache: IndexCache?, makeSource: @Sendable (String) throws -> any BlobDataSource)?
    /// The inflate engine of a gzip layer and of members inflated here.
    var inflateEngine: InflateEngine = .automatic
    /// The key an index must be sealed with (`IndexSeal`); nil: none is checked.
    var indexKey: IndexKey?
}
