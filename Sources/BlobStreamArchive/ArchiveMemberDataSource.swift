import BlobStream
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
///   target. An entry that carries its own bytes beside a link name is read as itself.
/// - Directories, symbolic links, devices, FIFOs and sockets fail with `.unsupported`;
///   encrypted entries too (`"… is encrypted"`).
///
/// ## Errors
/// `BlobStreamError`s whose message names the archive and the member, with a
/// `LibArchiveError` (or the upstream's error) as the cause: `.notFound` (no such member),
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
/// move the upstream with `.fileCurrentOffsetKey`: skipping the members before the one
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
/// ## Lending blocks
/// `getBuffer` lends the rest of libarchive's current data block (for an uncompressed tar,
/// the bytes as read from the upstream): a consumer that takes it (`blobstream cat` does)
/// skips a copy. See `getBuffer(_:length:)` for when the end is confirmed.
///
/// ## Length and offsets
/// `length` is the size in the member's header, once open (nil before, and for a zip
/// entry whose header leaves the size to a data descriptor). `.fileCurrentOffsetKey` is
/// an offset in the member (`offsetCapability` `.readAndDiscard`): forward moves skip
/// the bytes in libarchive's blocks without copying them; a backward move after bytes
/// were taken restarts from the start of the archive, which needs an upstream that
/// accepts offset 0 (refused otherwise).
///
/// ## Ownership and threads
/// The archive source owns its upstream: its `open()` opens it, its `close()` closes it.
/// Hand it an unopened upstream and do not read the upstream yourself.
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
    // Unchecked Sendable: every mutable stored property is guarded by `lock`; `state` and
    // `signal` are thread-safe themselves; the rest is immutable.

    /// The observable state.
    public let state = BlobDataSourceState()

    /// The source of the archive's bytes; owned (opened and closed) by this source.
    public let upstream: any BlobDataSource

    /// The member's name as asked for.
    public let member: String

    /// How messages name the archive: its path, its URL, or a description of the upstream.
    public let archiveName: String

    /// The name's bytes to match, normalized; set only while initializing (see
    /// `init(archive:memberBytes:name:verification:)`).
    var wanted: [UInt8]
    /// How messages name the member: `BlobURL.escapedName` of its bytes, one line, no
    /// terminal escapes; set only while initializing.
    var memberSpelling: String
    private let asynchronous: Bool
    private let signal: UpstreamSignal?
    /// What is checked before the member's end is announced.
    public let verification: ArchiveVerification
    private let openQueue = DispatchQueue(label: "BlobStreamArchive.ArchiveMemberDataSource.open")
    let lock = NSLock()

    // MARK: Guarded by `lock`

    private var started = false
    private var closed = false
    private var locating = false
    private var failure: BlobStreamError?
    /// An error met after bytes were handed out in the same `read`: reported by the next.
    private var pending: BlobStreamError?
    private var observations: [BlobObservation] = []
    private var handle: ArchiveHandle?
    private var memberLength: Int64?
    private var isSparse = false
    private var memberHeader: ArchiveEntry?

    /// The current data block (its bytes are valid until the next libarchive call).
    private var block: ArchiveHandle.Block?
    /// Member offset up to which bytes were taken from libarchive (delivered or skipped).
    private var produced: Int64 = 0
    /// Member offset of the next byte to deliver (≥ `produced`: the gap is skipped).
    private var target: Int64 = 0
    /// libarchive reported the end of the member's data.
    private var dataEnded = false

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
    public init(
        archive upstream: any BlobDataSource, member: String, name: String? = nil,
        verification: ArchiveVerification = .wholeArchive
    ) {
        self.verification = verification
        self.upstream = upstream
        self.member = member
        self.archiveName = name ?? Self.describe(upstream)
        self.wanted = Self.normalized(Array(member.utf8))
        self.memberSpelling = BlobURL.escapedName(member.utf8)
        if case .caller = upstream.completionContext {
            asynchronous = false
            signal = nil
        } else {
            asynchronous = true
            signal = UpstreamSignal()
        }
    }

    /// Makes a source for `member` of the archive read from `upstream`; `verifyingToEnd`
    /// true is `.wholeArchive`, false `.memberOnly`.
    @available(
        *, deprecated, renamed: "init(archive:member:name:verification:)",
        message: "pass verification: .wholeArchive (now the default) or .memberOnly"
    )
    public convenience init(
        archive upstream: any BlobDataSource, member: String, name: String? = nil, verifyingToEnd: Bool
    ) {
        self.init(
            archive: upstream, member: member, name: name, verification: verifyingToEnd ? .wholeArchive : .memberOnly)
    }

    /// Makes a source for `member` of the archive file at `path` (read with `pread`, with
    /// skip and seek callbacks). See `ArchiveVerification` for `verification`.
    public convenience init(archive path: String, member: String, verification: ArchiveVerification = .wholeArchive) {
        self.init(archive: PathUpstream(path: path), member: member, name: path, verification: verification)
    }

    deinit {
        signal?.cancel()
        for token in observations { token.invalidate() }
        handle?.free()
        if started && !closed { upstream.close() }
    }

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
    public var completionContext: BlobCompletionContext {
        let up = upstream.completionContext
        if case .caller = up { return .caller }
        let own = BlobCompletionContext.queue(openQueue)
        return .custom { up.isCurrent || own.isCurrent }
    }

    /// The member's header (path as stored, size, type, mtime) once open.
    public var entry: ArchiveEntry? {
        lock.lock()
        defer { lock.unlock() }
        return memberHeader
    }

    /// Opens the upstream, then reads headers up to the member. Completes inside this call
    /// over a synchronous upstream; later, from a private queue, over an asynchronous one.
    public func open() {
        lock.lock()
        defer { lock.unlock() }
        guard !started, !closed else { return }
        started = true
        if wanted.isEmpty {
            fail(makeError(.notFound, "an empty member name names nothing"))
            return
        }
        if wanted.contains(0) {
            fail(makeError(.malformedURL, "a member name cannot contain a NUL byte (it would be cut there)"))
            return
        }
        if let signal {
            let poke: @Sendable () -> Void = { [weak self] in
                guard let self else { return }
                self.openQueue.async { [weak self] in self?.upstreamChanged() }
            }
            observations =
                signal.observe(upstream) + [
                    upstream.observe(\.isOpenCompleted) { change in if change.newValue == true { poke() } },
                    upstream.observe(\.error) { _ in poke() },
                ]
            upstream.open()
            poke()
            return
        }
        upstream.open()
        if let error = upstream.error {
            fail(wrapUpstream(error, "failed to open"))
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
        if let failure {
            state.error = failure
            return -1
        }
        guard !closed, handle != nil, state.isOpenCompleted else {
            fail(makeError(closed ? .closed : .notOpen, closed ? "read after close" : "read before the open completed"))
            return -1
        }
        if let pending {
            fail(pending)
            return -1
        }
        guard maxLength > 0 else { return 0 }
        let n = pump(into: buffer, capacity: maxLength)
        if n == 0 { state.isAtEnd = true }
        return n
    }

    /// Lends the rest of libarchive's current data block (for an uncompressed tar, the
    /// block read from the upstream) instead of copying it: the bytes are consumed and stay
    /// valid until the next call. False, consuming nothing, where `read` has work to do
    /// (a hole of a sparse member, the end, an error, before the open completed).
    ///
    /// The end is confirmed by the next call, not with the last bytes lent (confirming
    /// it means asking libarchive for more, which would end the loan early), so a check
    /// that fails there (a zip CRC) fails that next call.
    public func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>
    ) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard failure == nil, pending == nil, !closed, handle != nil, state.isOpenCompleted else { return false }
        while true {
            if let current = block {
                let end = current.offset + Int64(current.size)
                // Before the block's data: a hole of a sparse member, which `read` fills.
                if produced < current.offset || current.pointer == nil { return false }
                if target > produced { produced = min(target, end) } // skip to the target
                if produced < end {
                    buffer.pointee =
                        UnsafeMutablePointer(mutating: current.pointer!.assumingMemoryBound(to: UInt8.self))
                        + Int(produced - current.offset)
                    length.pointee = Int(end - produced)
                    produced = end
                    target = produced
                    return true
                }
                block = nil
            }
            if dataEnded { return false }
            if let problem = fetchBlock() {
                fail(problem)
                return false
            }
        }
    }

    /// `.fileCurrentOffsetKey`: the member offset of the next byte.
    public func property(forKey key: Stream.PropertyKey) -> Any? {
        guard key == .fileCurrentOffsetKey else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return NSNumber(value: target)
    }

    /// `.fileCurrentOffsetKey`: before open, where reading starts (an offset past the
    /// member's size then fails the open with `.invalidOffset`); after, moves there
    /// (refused past the size; backward needs an upstream that accepts offset 0).
    public func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool {
        guard key == .fileCurrentOffsetKey, let offset = BlobOffset.value(from: property) else { return false }
        lock.lock()
        defer { lock.unlock() }
        guard !closed, failure == nil else { return false }
        guard started, state.isOpenCompleted else {
            target = offset // applied (and checked) when the open completes
            return true
        }
        if let memberLength, offset > memberLength { return false }
        if offset < produced {
            // Bytes before `offset` were already taken from libarchive: start again.
            guard rewindUpstream() else { return false }
            do {
                try locate()
            } catch {
                fail(error)
                return false
            }
            pending = nil
        }
        target = offset
        if isFinished && target == produced {
            state.isAtEnd = true
        } else {
            if state.isAtEnd { state.isAtEnd = false }
            state.hasBytesAvailable = true
        }
        return true
    }

    /// Ends a wait for an asynchronous upstream and passes the interruption on to the
    /// upstream, where a read may be blocked.
    public func interrupt() {
        signal?.cancel()
        upstream.interrupt()
    }

    /// Frees libarchive's state and closes the upstream. Ends a wait for an asynchronous
    /// upstream at once, from any thread. Further reads return −1.
    public func close() {
        signal?.cancel() // before the lock: a read or an open may be waiting while holding it
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        let tokens = observations
        observations = []
        for token in tokens { token.invalidate() }
        handle?.free()
        handle = nil
        block = nil
        if started { upstream.close() }
    }

    // MARK: - Listing

    /// The entries of the archive file at `path`. See `ArchiveListing`.
    public static func list(archive path: String) throws -> [ArchiveEntry] {
        try ArchiveListing.entries(ofArchiveAt: path)
    }

    /// The entries of the archive read from `upstream` (opened and closed here). See
    /// `ArchiveListing`.
    public static func list(archive upstream: any BlobDataSource, name: String? = nil) throws -> [ArchiveEntry] {
        try ArchiveListing.entries(of: upstream, name: name)
    }

    // MARK: - Internals (all with `lock` held)

    /// Called on `openQueue` after the asynchronous upstream announced something.
    private func upstreamChanged() {
        lock.lock()
        defer { lock.unlock() }
        guard started, !closed, failure == nil, !state.isOpenCompleted, !locating else { return }
        if let error = upstream.error {
            fail(wrapUpstream(error, "failed to open"))
        } else if upstream.isOpenCompleted {
            locating = true
            finishOpen()
            locating = false
        }
    }

    /// The upstream is open: find the member, apply a pending offset, announce.
    private func finishOpen() {
        do {
            try locate()
        } catch {
            if !closed { fail(error) }
            return
        }
        if let memberLength, target > memberLength {
            fail(makeError(.invalidOffset, "offset \(target) is past the end of the member (\(memberLength) bytes)"))
            return
        }
        if memberLength == 0 {
            // Confirm the end now (a zip CRC, a truncation), so that an empty member is at
            // its end as soon as it is open.
            if let problem = fetchBlock() {
                fail(problem)
                return
            }
            state.isOpenCompleted = true
            if isFinished && target == produced { state.isAtEnd = true } else { state.hasBytesAvailable = true }
            return
        }
        state.isOpenCompleted = true
        state.hasBytesAvailable = true
    }

    /// Opens a fresh libarchive handle and reads headers up to the member, following hard
    /// links. Resets the data cursor. Reading starts at offset 0 of the upstream, or, for an
    /// uncompressed tar searched before (see `TarHeaderIndex`), at the member's header or
    /// where the last search stopped. The upstream is at offset 0 when it is called.
    private func locate() throws(BlobStreamError) {
        var wanted = self.wanted
        var links: [String] = []
        var atStart = true
        let identity =
            UpstreamInput.canSeek(upstream) ? upstream.property(forKey: .blobContentIdentityKey) as? String : nil
        var useIndex = identity != nil
        while true {
            let wantedHash = wanted.withUnsafeBufferPointer { TarHeaderIndex.hash($0) }
            let plan: TarHeaderIndex.Plan =
                useIndex ? TarHeaderIndex.plan(identity: identity!, hash: wantedHash) : .scan
            var start: Int64 = 0
            var recorded: TarHeaderIndex.Snapshot?
            switch plan {
            case .scan: recorded = identity != nil ? TarHeaderIndex.Snapshot() : nil
            case .jump(let position): start = position
            case .resume(let snapshot):
                start = snapshot.last
                recorded = snapshot
            }
            if start != 0 || !atStart {
                let moved =
                    start != 0
                    ? upstream.setProperty(NSNumber(value: start), forKey: .fileCurrentOffsetKey)
                    : rewindUpstream()
                if !moved && links.isEmpty {
                    throw makeError(
                        .sourceFailed, "the upstream (\(type(of: upstream))) refused to move to offset \(start)")
                }
                if !moved {
                    throw makeError(
                        .unsupported,
                        "it is a hard link to '\(links.last ?? "")', stored earlier in the archive; reading it means going back to the start of the archive, which the upstream (\(type(of: upstream))) cannot do"
                    )
                }
            }
            atStart = start == 0
            handle?.free()
            handle = nil
            block = nil
            let input = UpstreamInput(upstream: upstream, signal: signal, start: start, inflatingGzip: true)
            var found: ArchiveHandle.Header?
            var stale = false // a remembered position did not hold the expected header
            var first = true
            do {
                let fresh = try ArchiveHandle(input: input)
                handle = fresh
                while try fresh.advance() {
                    let (matches, hash) = fresh.withCurrentPath { path in
                        let name = UnsafeBufferPointer(rebasing: path[Self.normalizedBounds(path)])
                        return (name.elementsEqual(wanted), TarHeaderIndex.hash(name))
                    }
                    if first, case .resume(let snapshot) = plan, hash != snapshot.lastHash || !fresh.isUncompressedTar {
                        stale = true
                        break
                    }
                    if case .jump = plan, !matches || !fresh.isUncompressedTar {
                        stale = true
                        break
                    }
                    if recorded != nil {
                        if first, case .scan = plan, !fresh.isUncompressedTar { recorded = nil }
                        recorded?.record(hash, at: start + fresh.headerPosition)
                    }
                    first = false
                    if matches {
                        found = fresh.currentHeader()
                        break
                    }
                }
            } catch {
                if first, start != 0, input.failure == nil {
                    stale = true // no archive, or no header, where one was remembered
                } else {
                    throw translate(
                        error, input: input,
                        while: first && handle == nil ? "opening the archive" : "reading the headers")
                }
            }
            if stale {
                TarHeaderIndex.forget(identity: identity!)
                useIndex = false
                continue
            }
            if let recorded { TarHeaderIndex.store(recorded, identity: identity!) }
            guard let header = found else {
                if let target = links.last {
                    throw makeError(.notFound, "it is a hard link to '\(target)', which is not in the archive")
                }
                throw makeError(.notFound, "no such member in the archive")
            }
            let entry = header.entry
            if entry.isEncrypted {
                throw makeError(.unsupported, "the member is encrypted (encrypted entries are not supported)")
            }
            switch entry.type {
            case .hardLink where (entry.size ?? 0) == 0:
                let target = entry.linkTarget ?? ""
                links.append(target)
                guard links.count <= 16 else {
                    throw makeError(
                        .corrupt, "hard links form a loop or a chain too long: \(links.joined(separator: " -> "))")
                }
                wanted = Self.normalized(Array(target.utf8))
                atStart = false
                continue
            case .file, .hardLink:
                memberHeader = entry
                memberLength = entry.size
                isSparse = header.isSparse
                produced = 0
                dataEnded = false
                block = nil
                return
            case .directory:
                throw makeError(.unsupported, "the member is a directory, not a file")
            case .symbolicLink:
                throw makeError(
                    .unsupported,
                    "the member is a symbolic link to '\(entry.linkTarget ?? "")', not a file (name its target instead)"
                )
            default:
                throw makeError(.unsupported, "the member is a \(entry.type), not a file")
            }
        }
    }

    private func rewindUpstream() -> Bool {
        upstream.offsetCapability != .none
            && upstream.setProperty(NSNumber(value: 0), forKey: .fileCurrentOffsetKey)
    }

    /// The member has no more bytes: libarchive said so, and no trailing hole remains.
    private var isFinished: Bool {
        guard dataEnded, block == nil else { return false }
        if isSparse, let memberLength, produced < memberLength { return false }
        return true
    }

    /// Fetches the next data block into `block` (or marks the end, checking the size);
    /// returns the error instead of setting it.
    private func fetchBlock() -> BlobStreamError? {
        guard let handle else { return makeError(.closed, "closed") }
        do {
            if let next = try handle.nextBlock() {
                if next.offset < produced {
                    return makeError(
                        .corrupt, "libarchive returned data for offset \(next.offset) after offset \(produced)")
                }
                if let memberLength, next.offset + Int64(next.size) > memberLength {
                    return makeError(.corrupt, "the member has more bytes than the \(memberLength) its header gives")
                }
                block = next
            } else {
                dataEnded = true
                block = nil
                if !isSparse, let memberLength, produced < memberLength {
                    return makeError(
                        .truncated,
                        "the archive ends inside the member: \(produced) of its \(memberLength) bytes are there")
                }
                if verification == .wholeArchive, let problem = verifyRest(handle) {
                    return problem
                }
            }
            return nil
        } catch {
            return translate(error, input: handle.input, while: "reading the member's data at offset \(produced)")
        }
    }

    /// `.wholeArchive`: after the member's end, when libarchive reads through a filter or
    /// the upstream cannot seek, reads the following entries to the end of the archive
    /// (decompressing what the filter holds, so every block check is reached), then the
    /// upstream to its end (its own end checks; through the gzip layer, the last gzip
    /// trailer). Returns the first problem met. An archive without a filter over a seekable
    /// upstream (a tar, zip or 7z file) has nothing after the member that checks it (a zip
    /// or 7z member's CRC-32 was checked at its end): nothing more is read.
    private func verifyRest(_ handle: ArchiveHandle) -> BlobStreamError? {
        let input = handle.input
        guard handle.hasFilter || !input.canSeek else { return nil }
        do {
            // Each following entry's data is read, not skipped: libarchive reports a
            // decompressor's error met while skipping as a mere truncation. (An encrypted
            // entry's data cannot be read: it is skipped.)
            while try handle.advance() {
                if handle.currentHeader().entry.isEncrypted { continue }
                while try handle.nextBlock() != nil {}
            }
        } catch {
            return translate(
                error, input: input,
                while: "reading the rest of the archive to verify it (the member's bytes may be wrong)")
        }
        while true {
            let n = input.read()
            if n == 0 { break }
            if n < 0 {
                return translate(.input, input: input, while: "reading the upstream to its end to verify the archive")
            }
        }
        return nil
    }

    /// Fills `out` with member bytes, skipping first up to `target`, filling holes with
    /// zeros. Returns the count; 0 at the end or after an error (then `failure` is set).
    /// Sets `isAtEnd` with the last bytes when the end is confirmed.
    private func pump(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        var n = 0
        while n < capacity {
            if let current = block {
                let end = current.offset + Int64(current.size)
                if produced < current.offset {
                    // A hole before this block: zeros.
                    if target > produced {
                        produced = min(target, current.offset)
                        continue
                    }
                    let k = Int(min(Int64(capacity - n), current.offset - produced))
                    (out + n).update(repeating: 0, count: k)
                    n += k
                    produced += Int64(k)
                    continue
                }
                if produced < end {
                    if target > produced {
                        produced = min(target, end)
                        continue
                    }
                    let k = Int(min(Int64(capacity - n), end - produced))
                    UnsafeMutableRawPointer(out + n).copyMemory(
                        from: current.pointer! + Int(produced - current.offset), byteCount: k)
                    n += k
                    produced += Int64(k)
                    continue
                }
                block = nil
            }
            if dataEnded {
                // A trailing hole of a sparse member, up to the size in its header.
                guard isSparse, let memberLength, produced < memberLength else { break }
                if target > produced {
                    produced = min(target, memberLength)
                    continue
                }
                let k = Int(min(Int64(capacity - n), memberLength - produced))
                (out + n).update(repeating: 0, count: k)
                n += k
                produced += Int64(k)
                continue
            }
            if let problem = fetchBlock() {
                return stop(problem, delivered: n)
            }
        }
        if target < produced { target = produced } // the bytes delivered
        // Confirm the end with the last bytes (a zip CRC is checked there): `isAtEnd` then
        // comes with them, and a failure is reported by the next read, never as a clean end.
        if n > 0, !dataEnded, let memberLength, produced == memberLength, target == produced,
            block.map({ $0.offset + Int64($0.size) <= produced }) ?? true
        {
            block = nil
            if let problem = fetchBlock() { return stop(problem, delivered: n) }
            if block != nil, block!.size > 0 {
                return stop(
                    makeError(.corrupt, "the member has more bytes than the \(memberLength) its header gives"),
                    delivered: n)
            }
        }
        if isFinished {
            if target > produced {
                return stop(
                    makeError(.invalidOffset, "offset \(target) is past the end of the member (\(produced) bytes)"),
                    delivered: n)
            }
            state.isAtEnd = true
        }
        return n
    }

    /// Records `problem`: pending when `delivered` bytes go out with this read, at once
    /// otherwise.
    private func stop(_ problem: BlobStreamError, delivered: Int) -> Int {
        if delivered > 0 {
            pending = problem
            return delivered
        }
        fail(problem)
        return -1
    }

    private func fail(_ error: BlobStreamError) {
        if failure == nil { failure = error }
        block = nil
        state.error = failure
    }

    // MARK: - Messages

    private func makeError(_ code: BlobStreamError.Code, _ what: String, cause: (any Error)? = nil) -> BlobStreamError {
        BlobStreamError(code, "archive '\(archiveName)', member '\(memberSpelling)': \(what)", cause: cause)
    }

    private func wrapUpstream(_ upstreamError: any Error, _ what: String) -> BlobStreamError {
        let code = (upstreamError as? BlobStreamError)?.code ?? .sourceFailed
        return makeError(code, "the upstream \(what): \(upstreamError)", cause: upstreamError)
    }

    private func translate(_ failure: ArchiveHandle.Failure, input: UpstreamInput, while doing: String)
        -> BlobStreamError
    {
        ArchiveErrors.translate(
            failure, input: input, prefix: "archive '\(archiveName)', member '\(memberSpelling)'", while: doing)
    }

    /// A leading `./` (repeated) and a trailing `/` do not count.
    static func normalized(_ name: [UInt8]) -> [UInt8] {
        name.withUnsafeBufferPointer { Array($0[normalizedBounds($0)]) }
    }

    /// The part of `name` that counts (see `normalized`).
    static func normalizedBounds(_ name: UnsafeBufferPointer<UInt8>) -> Range<Int> {
        let dot = UInt8(ascii: ".")
        let slash = UInt8(ascii: "/")
        var lo = 0
        var hi = name.count
        while hi - lo >= 2, name[lo] == dot, name[lo + 1] == slash {
            lo += 2
            while lo < hi, name[lo] == slash { lo += 1 }
        }
        while hi - lo > 1, name[hi - 1] == slash { hi -= 1 }
        if hi - lo == 1, name[lo] == dot { return lo..<lo }
        return lo..<hi
    }

    static func describe(_ upstream: any BlobDataSource) -> String {
        switch upstream {
        case let inner as ArchiveMemberDataSource: "\(inner.archiveName)!/\(inner.memberSpelling)"
        case let path as PathUpstream: path.path
        default: "\(type(of: upstream))"
        }
    }
}
