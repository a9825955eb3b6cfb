import BlobStream
import BlobStreamCompression
import BlobStreamSystem
import Foundation

/// A data source that streams one member of an archive: any format and filter libarchive
/// reads (tar — ustar, pax, GNU, with long names and sparse members —, tar.gz/.bz2/.xz/.zst,
/// zip, 7z, cpio, ar and Debian packages, ISO 9660, …), read from a path or from any
/// upstream source (a file, a pipe, a gzip stream, another archive's member).
///
/// ```swift
/// let hello = ArchiveMemberDataSource(archive: "/tmp/hello.deb", member: "data.tar.xz")
/// let binary = ArchiveMemberDataSource(archive: hello, member: "usr/bin/hello")
/// let stream = BlobInputStream(dataSource: binary)
/// ```
///
/// ## Members
/// - Names are the archive's bytes decoded as UTF-8, whatever the process locale (pax, zip
///   and 7z names included). A stored leading `./` matches with or without it, and so does
///   a trailing `/`. A name with `..`, a leading `/` or any Unicode is only a name: nothing
///   is ever written to disk. When several entries have the name, the first one is read.
/// - Sparse members (GNU tar `--sparse`, pax sparse) come out with their holes as zeros,
///   trailing hole included, exactly as `tar -xO` gives them.
/// - A hard link (a tar `link` entry) is read as its target's bytes: the source goes back
///   to the start of the archive and reads the target (which a tar stores earlier), so this
///   needs an upstream that accepts offset 0 (a path, a file, an in-memory source, a gzip
///   or archive source over one); over a pipe it fails with `.unsupported`, naming the
///   target (unless the archive up to the link came in one read, which the reader still
///   holds). An entry that carries its own bytes beside a link name is read as itself.
/// - Directories, symbolic links, devices, FIFOs and sockets fail with `.unsupported`;
///   encrypted entries too (`"… is encrypted"`).
///
/// ## Errors
/// `BlobStreamError`s whose message names the archive and the member and says what
/// failed, with the underlying error as the cause (a `LibArchiveError`, a `ZlibError` for
/// the gzip layer, or the upstream's own error), whose text the message does not repeat:
/// `description` shows both. Codes: `.notFound` (no such member),
/// `.truncated` (the archive ends inside the member or its header; never a short
/// success: the bytes delivered are checked against the size in the header), `.corrupt`
/// (a bad header checksum, corrupt compressed data, a zip CRC mismatch, …),
/// `.unsupported` (see above, and formats that need seeking over an upstream that cannot
/// seek), the upstream's own code when it fails. Errors are sticky.
///
/// ## Integrity
/// By default (`verification: .wholeArchive`) the member's end is announced only after
/// the rest of the archive was read and checked, as `bsdtar -x` scans the whole archive:
/// an xz block's check, a bzip2 block's CRC, a zstd frame's checksum come where the block
/// or frame ends, often after the member's last byte, so a garbled byte there would
/// otherwise give wrong bytes with a clean end. libarchive (3.6) never checks a gzip
/// member's CRC-32 and size (bsdtar does not either): this source inflates a gzip layer
/// itself, with zlib, which checks them (in both modes, where a gzip member ends), and
/// lets libarchive read the archive inside; this costs nothing more. Any error found
/// after the member's last byte fails the member — the last bytes may be delivered, then
/// the next read fails, naming the archive, the member and what failed — never a clean
/// end. `.memberOnly` is the fast mode: it does NOT verify the rest of the stream (see
/// `ArchiveVerification`). An archive without a compression filter read over a seekable
/// upstream (a tar, zip or 7z file) costs nothing more: nothing after the member checks it.
///
/// What protects a member's bytes is the format's own check: zip and 7z keep a CRC-32 per
/// member (checked at its end, in both modes); tar.xz, tar.bz2, tar.zst and tar.gz the
/// compressed stream's checks, which cover the tar's headers and bodies alike. A zstd frame
/// written without its optional checksum (libarchive 3.6's writer, `bsdtar --zstd`, omits
/// it; the `zstd` tool writes it) protects nothing: a garbled literal gives wrong bytes
/// that no reader can see. An uncompressed tar (and cpio, ar, ISO 9660) has no checksum
/// over a member's body at all, only over its header: a changed byte in the body is read
/// as it is, in every mode. For those, check a digest of your own.
///
/// ## Seeking
/// When the upstream can seek (`offsetCapability == .seek` with a known `length`: a path,
/// a `FileDataSource`, an in-memory source), libarchive gets skip and seek callbacks that
/// move the upstream (`seek(to:)`, through the core's `BlobUpstreamReader` reader, which reads
/// the upstream for this source): skipping the members before the one
/// asked for does not read their bodies, and zip archives are read from their central
/// directory. Over an upstream that cannot seek (a pipe, a gzip stream, another archive's
/// member), streamable formats (tar and its compressed forms, cpio, ar, ISO 9660, zip
/// read from its local headers, even with data descriptors) are read in one pass; 7-Zip
/// archives, which keep their index at the end, fail with `.unsupported` saying that the
/// upstream must be able to seek.
///
/// Locating a member reads a few KiB after each skip, not whole blocks. In an uncompressed
/// tar whose upstream names its bytes (`.blobContentIdentityKey`: files do), the process
/// remembers where each name's first header starts, so another source for the same archive
/// jumps to its member, or resumes where the last search stopped, instead of reading every
/// header again (`blobstream cat A!/x A!/y` reads A's headers once). A remembered position
/// is checked (the header there must carry the name) and forgotten when it does not hold.
///
/// ## Plain tar by seeking, and member indexes
/// An uncompressed tar over a seekable upstream is not read by libarchive: this source
/// walks its headers itself (each 512-byte header read where it is and its checksum
/// verified, members' bodies skipped by offset arithmetic; ustar, GNU long names, pax
/// records) and reads the member's bytes where they are. What the walk does not handle
/// (sparse members, multi-volume parts, a damaged header, …) is read by libarchive, the
/// reference, as before. With an `ArchiveIndex` (`ArchiveIndexOption`; by default
/// `ARCHIVE.blobidx` beside an archive read by path, when it matches), opening a member
/// is a lookup: a tar member's or a stored zip member's bytes are read where they are and
/// checked against the CRC-32 in the index at the member's end (`.changed` for a tar
/// member whose bytes differ from those indexed); a zip member compressed with deflate is
/// inflated from exactly its compressed bytes (ISA-L when it loads, zlib otherwise), its
/// size and CRC-32 checked at its end (`.corrupt`); other zip members (other methods,
/// encrypted) are read by libarchive. Without an index, a zip over an upstream that can
/// seek is its own index: the member is found in its central directory (zip64 too; the
/// member's local header must agree with it) and read the same way, stored or inflated,
/// its size and CRC-32 checked (`lookup` says `.zipCentralDirectory`). A tar.gz member is
/// inflated from the gzip seek point
/// before it (see `ArchiveIndex`); nothing after a member read through an index is read, in
/// either `verification` mode.
///
/// ## Lending blocks
/// `getBuffer` lends the rest of libarchive's current data block (for an uncompressed tar,
/// the bytes as read from the upstream): a consumer that takes it (`blobstream cat` does)
/// skips a copy. See `getBuffer(_:length:)` for when the end is confirmed.
///
/// ## Length and offsets
/// `length` is the size in the member's header, once open (nil before, and for a zip
/// entry whose header leaves the size to a data descriptor). `readOffset` and `seek(to:)`
/// (and `.fileCurrentOffsetKey`, the core's shim over them) are offsets in the member
/// (`offsetCapability` `.readAndDiscard`): forward moves skip
/// the bytes in libarchive's blocks without copying them; a backward move after bytes
/// were taken restarts from the start of the archive, which needs an upstream that
/// accepts offset 0 (refused otherwise).
///
/// ## Ownership and threads
/// The archive source owns its upstream: its `open()` opens it, its `close()` (or its
/// deinitialization) closes it, opened or not. Hand it an unopened upstream and do not
/// read the upstream yourself.
///
/// libarchive pulls its input synchronously, inside `open` and `read`. Over a synchronous
/// upstream (`completionContext == .caller`: files, pipes, gzip, in-memory, archive
/// members over those) everything happens inside the owner's calls and
/// `completionContext` is `.caller`. Over an asynchronous upstream the source completes
/// its open when the upstream announces its own (observing it), then locates the member on
/// a private queue and announces `isOpenCompleted` from there; later, when libarchive
/// needs bytes the upstream does not have yet, `read` waits for the upstream's
/// announcement — a deliberate exception to contract rule 2, made safe by rule 3: it
/// waits only when the calling thread is not where the upstream announces
/// (`upstream.completionContext.isCurrent` false), and fails with `.wouldDeadlock`
/// otherwise; `close()` from another thread ends the wait.
public final class ArchiveMemberDataSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: every mutable stored property is guarded by `lock` (and so are the
    // readers they hold); `state` is thread-safe itself, and so are the reader's `cancel()`
    // and `interrupt()`, the only calls made on it without the lock; the rest is immutable.
    //
    // This type is the front: the public API, the lock, the options, the state machine
    // (open, read, seek, close, events, errors). The member is found and read by the readers
    // in MemberReaders/: `IndexedMemberReader`, `ZipDirectoryMemberReader`,
    // `TarWalkMemberReader` (which hands to libarchive what it does not walk), then read by
    // a `MemberReader` (`LibArchiveMemberReader` or `MemberSliceReader`), each owning its state.

    /// The observable state.
    public let state = BlobDataSourceState()

    /// The source of the archive's bytes; owned (opened and closed) by this source.
    public var upstream: any BlobDataSource { reader.source }

    /// The member's name as asked for.
    public var member: String { naming.member }

    /// How messages name the archive: its path, its URL, or a description of the upstream.
    public var archiveName: String { naming.archiveName }

    /// What is checked before the member's end is announced.
    public let verification: ArchiveVerification

    /// The names in messages and the name's bytes to match (see `ArchiveMemberNaming`).
    let naming: ArchiveMemberNaming
    /// The upstream, read through the core kit's reader (buffered, moved, waited for).
    let reader: BlobUpstreamReader
    /// Where the member is located after an asynchronous upstream announced its open.
    let openQueue = DispatchQueue(label: "BlobStreamArchive.ArchiveMemberDataSource.open")
    /// Guards the state below and serializes the libarchive calls.
    let lock = NSLock()

    // MARK: Guarded by `lock`

    /// Set before `open()`: the index to use, the archive's path, the inflate engine.
    var options = ArchiveMemberOptions()
    /// The member index way: the index in use, resolved at the first search, and its state.
    let indexed: IndexedMemberReader
    /// Where the source is in its life, and its errors.
    var life = Lifecycle()
    /// Member offset of the next byte to deliver (before open, where reading starts; for
    /// libarchive, ≥ the reader's `produced`: the gap is skipped).
    var target: Int64 = 0
    /// The member found: its header and how it was found (kept after `close()`).
    var found = Found()
    /// What reads the member once found; nil before (and while searching again).
    var reading: MemberReader?

    /// Where an `ArchiveMemberDataSource` is in its life, and its errors.
    struct Lifecycle {
        /// `open()` was called.
        var started = false
        var closed = false
        /// The member is being located on `openQueue` (asynchronous upstream).
        var locating = false
        /// The first error; sticky.
        var failure: BlobStreamError?
        /// An error met after bytes were handed out in the same `read`: reported by the next.
        var pending: BlobStreamError?
    }

    /// The member's header once accepted, and how the member was found (`lookup`).
    struct Found {
        var entry: ArchiveEntry?
        var lookup: ArchiveMemberLookup?
    }

    /// The member's size from its header.
    var memberLength: Int64? { found.entry?.size }

    /// Makes a source for `member` of the archive read from `upstream`.
    ///
    /// - Parameters:
    ///   - upstream: the archive's bytes, not opened yet; this source opens and closes it.
    ///   - member: the member's name (a leading `./` or trailing `/` is ignored).
    ///   - name: how errors name the archive; by default a description of the upstream.
    ///   - verification: `.wholeArchive` (the default) reads the rest of the archive after
    ///     the member's last byte, and checks it, before announcing the end, so that checks
    ///     made only there (an xz or bzip2 block, a gzip CRC-32) fail the member instead of
    ///     passing unseen; `.memberOnly` announces the end at once and does not verify the
    ///     rest of the stream (see "Integrity" above).
    public convenience init(
        archive upstream: any BlobDataSource, member: String, name: String? = nil,
        verification: ArchiveVerification = .wholeArchive
    ) {
        let naming = ArchiveMemberNaming(
            member: member, archiveName: name ?? Self.describe(upstream), wanted: Self.normalized(Array(member.utf8)),
            spelling: BlobURL.escapedName(member.utf8))
        self.init(upstream: upstream, naming: naming, verification: verification)
    }

    /// Makes a source for the member `naming` names of the archive read from `upstream`.
    init(upstream: any BlobDataSource, naming: ArchiveMemberNaming, verification: ArchiveVerification) {
        self.verification = verification
        self.naming = naming
        // A remote archive is read by jumps (its index or directory, then the member): its
        // first request need not bring a large block from the start.
        (upstream as? any BlobRangeReading)?.expectRandomAccess()
        let owner = WeakArchiveSource()
        reader = LibArchiveInput.makeReader(upstream) { owner.source?.upstreamAnnounced() }
        indexed = IndexedMemberReader(archive: MemberInArchive(reader: reader, naming: naming))
        owner.source = self
    }

    /// Makes a source for `member` of the archive file at `path` (read with `pread`, with
    /// skip and seek callbacks). See `ArchiveVerification` for `verification`.
    public convenience init(archive path: String, member: String, verification: ArchiveVerification = .wholeArchive) {
        self.init(archive: ArchiveFileSource(path: path), member: member, name: path, verification: verification)
        options.archivePath = path
    }

    // The reader closes the upstream (opened or not) when it goes, and the member reader
    // frees libarchive's state.

    // MARK: - BlobDataSource

    /// The member's size from its header once open; nil before, or when the header has
    /// none.
    public var length: Int64? {
        lock.lock()
        defer { lock.unlock() }
        return memberLength
    }

    /// `.readAndDiscard`: forward by skipping, backward by restarting the archive.
    public var offsetCapability: BlobOffsetCapability { .readAndDiscard }

    /// `.caller` over a synchronous upstream; otherwise the upstream's context or this
    /// source's private open queue.
    public var completionContext: BlobCompletionContext { upstream.completionContext.including(openQueue) }

    /// The member's header (path as stored, size, type, mtime) once open.
    public var entry: ArchiveEntry? {
        lock.lock()
        defer { lock.unlock() }
        return found.entry
    }

    /// Opens the upstream, then reads headers up to the member. Completes inside this call
    /// over a synchronous upstream; later, from a private queue, over an asynchronous one.
    public func open() {
        lock.lock()
        defer { lock.unlock() }
        guard !life.started, !life.closed else { return }
        life.started = true
        if naming.wanted.isEmpty {
            fail(makeError(.notFound, "an empty member name names nothing"))
            return
        }
        if naming.wanted.contains(0) {
            fail(makeError(.malformedURL, "a member name cannot contain a NUL byte (it would be cut there)"))
            return
        }
        indexed.expectFirstBytes(options)
        reader.open()
        indexed.requestIndexEarly(options)
        if reader.isAsynchronous {
            // The member is located on `openQueue` once the upstream announces its open.
            openQueue.async { [weak self] in self?.upstreamChanged() }
            return
        }
        if let error = upstream.error {
            fail(naming.upstreamFailed(error, "failed to open"))
        } else if upstream.isOpenCompleted {
            finishOpen()
        } else {
            fail(
                makeError(
                    .sourceFailed,
                    "the upstream (\(type(of: upstream))) says it completes inside its calls but did not complete its open"
                ))
        }
    }

    /// Copies up to `maxLength` bytes of the member into `buffer`.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        lock.lock()
        defer { lock.unlock() }
        if let failure = life.failure {
            state.error = failure
            return -1
        }
        guard !life.closed, let reading, state.isOpenCompleted else {
            let closed = life.closed
            fail(makeError(closed ? .closed : .notOpen, closed ? "read after close" : "read before the open completed"))
            return -1
        }
        if let pending = life.pending {
            fail(pending)
            return -1
        }
        guard maxLength > 0 else { return 0 }
        let result = reading.read(into: buffer, capacity: maxLength, target: &target)
        let n: Int
        if let problem = result.problem {
            n = stop(problem, delivered: result.count)
        } else {
            n = result.count
            if result.atEnd { state.isAtEnd = true }
        }
        if n == 0 { state.isAtEnd = true }
        return n
    }

    /// Ends a wait for an asynchronous upstream and passes the interruption on to the
    /// upstream, where a read may be blocked.
    public func interrupt() {
        reader.interrupt()
    }

    /// Frees libarchive's state and closes the upstream. Ends a wait for an asynchronous
    /// upstream at once, from any thread. Further reads return −1.
    public func close() {
        reader.cancel() // before the lock: a read or an open may be waiting while holding it
        lock.lock()
        defer { lock.unlock() }
        guard !life.closed else { return }
        life.closed = true
        reading?.close()
        indexed.close()
        reader.close()
    }

    /// Records `problem`: pending when `delivered` bytes go out with this read, at once
    /// otherwise.
    func stop(_ problem: BlobStreamError, delivered: Int) -> Int {
        if delivered > 0 {
            life.pending = problem
            return delivered
        }
        fail(problem)
        return -1
    }

    func fail(_ error: BlobStreamError) {
        if life.failure == nil { life.failure = error }
        if case .libarchive(let libarchive) = reading { libarchive.block = nil }
        state.error = life.failure
    }

    /// An error this source found itself (see `ArchiveMemberNaming`).
    func makeError(_ code: BlobStreamError.Code, _ what: String, cause: (any Error)? = nil) -> BlobStreamError {
        naming.makeError(code, what, cause: cause)
    }
}

/// Lets the reader's observers reach the source without keeping it alive.
private final class WeakArchiveSource: @unchecked Sendable {
    // Unchecked Sendable: `source` is set once, in the source's initializer, before the
    // reader can call back (it observes only after `open()`).
    weak var source: ArchiveMemberDataSource?
}
