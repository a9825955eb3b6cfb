import BlobStream
import CBlobStreamArchive
import Foundation

/// The one place where this module calls libarchive: a reading handle over an
/// `LibArchiveInput`, with every format and filter enabled, that hands out headers and data
/// blocks as Swift values. No libarchive type leaves this file.
///
/// Every call runs with the calling thread's locale switched to `C.UTF-8` (`uselocale`,
/// thread-local, restored after the call): libarchive converts names to "the current
/// locale", and in the C locale that a Swift process runs in, pax and zip names that are
/// not ASCII would come back as NULL. With a UTF-8 locale, `archive_entry_pathname` gives
/// UTF-8 for pax/zip/7z names and the raw header bytes for formats that store raw bytes
/// (ustar, GNU tar, cpio, ar). The process locale is never changed.
///
/// Not thread-safe: its owner serializes calls.
final class ArchiveHandle {
    /// A header, copied out of libarchive's entry.
    struct Header {
        /// The stored name as bytes (UTF-8 for formats that store UTF-8, raw otherwise).
        var pathBytes: [UInt8]
        var entry: ArchiveEntry
        /// `archive_entry_sparse_count > 0`: holes between and after data blocks are zeros.
        var isSparse: Bool
    }

    /// One data block: `size` bytes at `pointer`, at `offset` in the member. Valid until the
    /// next call on the handle.
    struct Block {
        var pointer: UnsafeRawPointer?
        var size: Int
        var offset: Int64
    }

    enum Failure: Error {
        /// libarchive failed: its return code, errno, message, and the format it was reading.
        case library(code: Int32, errno: Int32, message: String, format: Int32)
        /// The upstream failed or the owner cancelled (the input holds the details).
        case input
    }

    private var archive: OpaquePointer?
    let input: LibArchiveInput
    /// A zip's stored names where libarchive rewrites them (see `ZipStoredNames`).
    private var zipNames: ZipStoredNames?
    /// The current entry's stored name, when libarchive handed it out rewritten.
    private var currentStoredName: [UInt8]?
    /// The upstream offset the handle started reading at (its `headerPosition` 0).
    private let startOffset: Int64

    /// Makes a handle and opens it: reads the first bytes to pick the filters and format.
    init(input: LibArchiveInput) throws(Failure) {
        self.input = input
        startOffset = input.position
        // A gzip layer the input inflates itself must be found before the callbacks are set.
        guard input.prepare() else { throw Failure.input }
        if input.canSeek, !input.inflatesGzip, let length = input.upstream.length {
            zipNames = ZipStoredNames.read(from: input.reader, length: length)
        }
        let a: OpaquePointer? = UTF8Locale.run { archive_read_new() }
        guard let a else {
            throw Failure.library(code: ARCHIVE_FATAL, errno: ENOMEM, message: "archive_read_new failed", format: 0)
        }
        archive = a
        let context = Unmanaged.passUnretained(input).toOpaque()
        let rc: Int32 = UTF8Locale.run {
            _ = archive_read_support_filter_all(a) // WARN when an external program is missing
            _ = archive_read_support_format_all(a)
            _ = archive_read_set_read_callback(a, archiveReadCallback)
            if input.canSeek {
                _ = archive_read_set_skip_callback(a, archiveSkipCallback)
                _ = archive_read_set_seek_callback(a, archiveSeekCallback)
            }
            _ = archive_read_set_callback_data(a, context)
            return archive_read_open1(a)
        }
        if rc != ARCHIVE_OK && rc != ARCHIVE_WARN {
            let failure = self.failure(rc)
            free()
            throw failure
        }
    }

    deinit { free() }

    /// Frees libarchive's state. Safe more than once.
    func free() {
        guard let a = archive else { return }
        archive = nil
        current = nil
        _ = UTF8Locale.run { archive_read_free(a) }
    }

    /// The entry of the current header (libarchive's, valid until the next call).
    private var current: OpaquePointer?

    /// The next header; nil at the end of the archive.
    func nextHeader() throws(Failure) -> Header? {
        guard try advance() else { return nil }
        return currentHeader()
    }

    /// Moves to the next header without copying it out; false at the end of the archive.
    func advance() throws(Failure) -> Bool {
        current = nil
        currentStoredName = nil
        guard let a = archive else {
            throw Failure.library(code: ARCHIVE_FATAL, errno: 0, message: "closed", format: 0)
        }
        var entryPointer: OpaquePointer?
        let rc = UTF8Locale.run { archive_read_next_header(a, &entryPointer) }
        if rc == ARCHIVE_EOF { return false }
        // RETRY (a damaged header libarchive could skip) and FAILED are errors here: the
        // member asked for may be the damaged one.
        guard rc == ARCHIVE_OK || rc == ARCHIVE_WARN, let e = entryPointer else { throw failure(rc) }
        current = e
        if zipNames != nil, ArchiveFormat.isZip(archive_format(a)) {
            let given = UTF8Locale.run { Self.pathBytes(e) }
            let stored = zipNames!.storedName(for: given)
            if stored != given { currentStoredName = stored }
        } else if input.keepsRecentBytes, ArchiveFormat.isZip(archive_format(a)) {
            // No central directory (the upstream cannot seek): the local header's name, read
            // from the bytes libarchive was just handed.
            let given = UTF8Locale.run { Self.pathBytes(e) }
            if let stored = ZipStoredNames.localName(
                in: input.recent, from: input.recentStart, after: startOffset + archive_read_header_position(a),
                given: given), stored != given
            {
                currentStoredName = stored
            }
        }
        return true
    }

    /// The current header, copied out (call after `advance()` returned true).
    func currentHeader() -> Header {
        UTF8Locale.run { Self.header(current!, storedName: currentStoredName) }
    }

    /// Calls `body` with the current header's stored name, without copying it (the bytes
    /// are valid only inside `body`).
    func withCurrentPath<T>(_ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        if let currentStoredName { return currentStoredName.withUnsafeBufferPointer(body) }
        return UTF8Locale.run {
            let raw = archive_entry_pathname(current!) ?? archive_entry_pathname_utf8(current!)
            guard let raw else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
            return body(
                UnsafeBufferPointer(
                    start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw)))
        }
    }

    /// Where the current header starts, counted in the bytes this handle read (its first
    /// byte is 0), including the extension headers (pax, GNU long names) that precede it.
    var headerPosition: Int64 {
        guard let a = archive else { return 0 }
        return archive_read_header_position(a)
    }

    /// The archive is a tar (any variant) read with no filter: each header sits at a fixed
    /// place in the upstream, and reading can start at one.
    var isUncompressedTar: Bool {
        guard let a = archive else { return false }
        return archive_format(a) & ARCHIVE_FORMAT_BASE_MASK == ARCHIVE_FORMAT_TAR && archive_filter_count(a) == 1
            && archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE && !input.inflatesGzip
    }

    /// The archive is read through a filter (gzip, bzip2, xz, zstd, …; a gzip layer the
    /// input inflates counts): the format's bytes are decompressed, and the filter's checks
    /// come where its blocks end.
    var hasFilter: Bool {
        guard let a = archive else { return false }
        return input.inflatesGzip || !(archive_filter_count(a) == 1 && archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE)
    }

    /// The next data block of the current entry; nil at its end.
    func nextBlock() throws(Failure) -> Block? {
        guard let a = archive else {
            throw Failure.library(code: ARCHIVE_FATAL, errno: 0, message: "closed", format: 0)
        }
        var pointer: UnsafeRawPointer?
        var size = 0
        var offset: la_int64_t = 0
        let rc = UTF8Locale.run { archive_read_data_block(a, &pointer, &size, &offset) }
        switch rc {
        case ARCHIVE_OK: return Block(pointer: pointer, size: size, offset: offset)
        case ARCHIVE_EOF: return nil
        default:
            // WARN here means bytes were lost or checked wrong (a bad CRC): never a success.
            throw failure(rc)
        }
    }

    /// The format keeps a check of each member's bytes (zip, 7z, …: a CRC-32), or might:
    /// every format except those known to check only headers (tar, cpio, ar, ISO 9660).
    var formatChecksMembers: Bool {
        let family = format & ARCHIVE_FORMAT_BASE_MASK
        return ![ARCHIVE_FORMAT_TAR, ARCHIVE_FORMAT_CPIO, ARCHIVE_FORMAT_AR, ARCHIVE_FORMAT_ISO9660].contains(family)
    }

    /// The format being read (`ARCHIVE_FORMAT_*`), 0 before the first header.
    var format: Int32 {
        guard let a = archive else { return 0 }
        return archive_format(a)
    }

    private func failure(_ rc: Int32) -> Failure {
        if input.failure != nil || input.cancelled { return .input }
        guard let a = archive else { return .library(code: rc, errno: 0, message: "closed", format: 0) }
        let message = archive_error_string(a).map { String(cString: $0) } ?? ""
        return .library(code: rc, errno: archive_errno(a), message: message, format: archive_format(a))
    }

    /// The entry's name as libarchive gives it.
    private static func pathBytes(_ e: OpaquePointer) -> [UInt8] {
        let raw = archive_entry_pathname(e) ?? archive_entry_pathname_utf8(e)
        return raw.map {
            Array(
                UnsafeBufferPointer(start: UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self), count: strlen($0)))
        } ?? []
    }

    /// The entry copied out; named `storedName` when given (a zip name libarchive rewrote).
    private static func header(_ e: OpaquePointer, storedName: [UInt8]?) -> Header {
        let bytes = storedName ?? pathBytes(e)
        let path = String(decoding: bytes, as: UTF8.self)
        let size: Int64? = archive_entry_size_is_set(e) != 0 ? archive_entry_size(e) : nil
        let hardlink = (archive_entry_hardlink(e) ?? archive_entry_hardlink_utf8(e)).map { String(cString: $0) }
        let symlink = (archive_entry_symlink(e) ?? archive_entry_symlink_utf8(e)).map { String(cString: $0) }
        let type: ArchiveEntry.EntryType
        if let hardlink, !hardlink.isEmpty {
            type = .hardLink
        } else {
            switch Int(archive_entry_filetype(e)) {
            case EntryFileType.regular, 0: type = .file
            case EntryFileType.directory: type = .directory
            case EntryFileType.symbolicLink: type = .symbolicLink
            case EntryFileType.characterDevice: type = .characterDevice
            case EntryFileType.blockDevice: type = .blockDevice
            case EntryFileType.fifo: type = .fifo
            case EntryFileType.socket: type = .socket
            default: type = .unknown
            }
        }
        let mtime: Date? =
            archive_entry_mtime_is_set(e) != 0
            ? Date(timeIntervalSince1970: Double(archive_entry_mtime(e)) + Double(archive_entry_mtime_nsec(e)) / 1e9)
            : nil
        let entry = ArchiveEntry(
            path: path, size: size, type: type, mtime: mtime,
            linkTarget: type == .hardLink ? hardlink : (type == .symbolicLink ? symlink : nil),
            isEncrypted: archive_entry_is_encrypted(e) != 0, pathBytes: bytes,
            permissions: UInt32(archive_entry_perm(e)) & 0o7777, ownership: ownership(e),
            device: type == .characterDevice || type == .blockDevice
                ? ArchiveEntry.DeviceNumber(
                    major: UInt64(archive_entry_rdevmajor(e)), minor: UInt64(archive_entry_rdevminor(e))) : nil)
        return Header(pathBytes: bytes, entry: entry, isSparse: archive_entry_sparse_count(e) > 0)
    }
}

extension ArchiveHandle {
    /// The owner and group the header stores (names nil when it has none).
    fileprivate static func ownership(_ e: OpaquePointer) -> ArchiveEntry.Ownership {
        func name(_ raw: UnsafePointer<CChar>?) -> String? {
            guard let raw, raw.pointee != 0 else { return nil }
            return String(
                decoding: UnsafeBufferPointer(
                    start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw)), as: UTF8.self
            )
        }
        return ArchiveEntry.Ownership(
            uid: archive_entry_uid(e), gid: archive_entry_gid(e),
            owner: name(archive_entry_uname(e) ?? archive_entry_uname_utf8(e)),
            group: name(archive_entry_gname(e) ?? archive_entry_gname_utf8(e)))
    }
}

/// libarchive's file types, the values `archive_entry_filetype` gives: archive_entry.h's
/// `AE_IFREG`, `AE_IFDIR`, … (macros with a cast, which Swift does not import).
private enum EntryFileType {
    static let regular = 0o100000
    static let directory = 0o040000
    static let symbolicLink = 0o120000
    static let characterDevice = 0o020000
    static let blockDevice = 0o060000
    static let fifo = 0o010000
    static let socket = 0o140000
}

/// libarchive's format codes this module names in messages.
enum ArchiveFormat {
    static func isSevenZip(_ format: Int32) -> Bool { format & ARCHIVE_FORMAT_BASE_MASK == ARCHIVE_FORMAT_7ZIP }
    static func isZip(_ format: Int32) -> Bool { format & ARCHIVE_FORMAT_BASE_MASK == ARCHIVE_FORMAT_ZIP }
}

/// Runs libarchive calls with the thread's locale set to C.UTF-8 (see `ArchiveHandle`).
enum UTF8Locale {
    /// `locale_t` is a pointer to an immutable locale object; sharing it across threads is
    /// what `uselocale` is for.
    private struct Handle: @unchecked Sendable { let locale: locale_t? }
    private static let handle: Handle = {
        // The LC_CTYPE category (its mask is 1 << LC_CTYPE) decides the codeset.
        for name in ["C.UTF-8", "C.utf8", "en_US.UTF-8"] {
            if let l = newlocale(1 << LC_CTYPE, name, nil) { return Handle(locale: l) }
        }
        return Handle(locale: nil) // no UTF-8 locale installed: names in the process locale
    }()

    @inline(__always)
    static func run<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard let locale = handle.locale else { return try body() }
        let previous = uselocale(locale)
        defer { uselocale(previous) }
        return try body()
    }
}

// MARK: - Callbacks (C function pointers; the context is an unretained `LibArchiveInput`)

private func archiveReadCallback(
    _ archive: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ buffer: UnsafeMutablePointer<UnsafeRawPointer?>?
) -> la_ssize_t {
    let input = Unmanaged<LibArchiveInput>.fromOpaque(context!).takeUnretainedValue()
    var bytes: UnsafeRawPointer?
    let n = input.read(lending: &bytes)
    if n > 0 { buffer?.pointee = bytes }
    return n < 0 ? la_ssize_t(ARCHIVE_FATAL) : n
}

private func archiveSkipCallback(
    _ archive: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ request: la_int64_t
) -> la_int64_t {
    let input = Unmanaged<LibArchiveInput>.fromOpaque(context!).takeUnretainedValue()
    return input.skip(request)
}

private func archiveSeekCallback(
    _ archive: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ offset: la_int64_t, _ whence: Int32
) -> la_int64_t {
    let input = Unmanaged<LibArchiveInput>.fromOpaque(context!).takeUnretainedValue()
    return input.seek(offset, whence: whence).map { $0 } ?? la_int64_t(ARCHIVE_FATAL)
}
