import BlobStream

/// A zip's names as stored, for the names libarchive rewrites.
///
/// libarchive (3.6) turns the backslashes of a zip name that has no `/` into slashes, as
/// if a Windows writer had used them as separators: `back\slash.txt` is handed out as
/// `back/slash.txt`, while `dir/back\slash.txt` is kept. unzip, zipinfo and Python's zipfile
/// show the stored name, and an `ArchiveIndex` (read from the central directory) keeps it;
/// so this module lists, indexes and finds every member by its stored name: one spelling,
/// with or without an index. The central directory is read once per handle, before
/// libarchive reads anything, over an upstream that can seek; only the names that hold a
/// backslash, and the names libarchive could confuse with them, are kept.
///
/// A zip read from an upstream that cannot seek has no central directory to read first:
/// each name is then read from its local header, in the bytes just handed to libarchive
/// (`localName(in:from:after:given:)`).
struct ZipStoredNames {
    /// For each name libarchive may hand out for more than one stored name: those stored
    /// names, in the order of their local headers (the order libarchive reads them).
    private var candidates: [[UInt8]: [[UInt8]]]

    private static let backslash = UInt8(ascii: "\\")
    private static let slash = UInt8(ascii: "/")

    /// The stored names of the zip `reader` reads, when it starts with a zip local header
    /// at offset 0 and a stored name holds a backslash; nil otherwise (and when the central
    /// directory cannot be read: libarchive then reports what is wrong). The reader is left
    /// where it was.
    static func read(from reader: BlobUpstreamReader, length: Int64) -> ZipStoredNames? {
        let start = reader.offset
        guard start == 0, length >= 22 else { return nil }
        defer { _ = try? reader.seek(to: start) }
        let access = ArchiveOffsetReader(reader: reader, length: length, name: "")
        guard let signature = try? access.bytes(at: 0, count: 4, what: "the signature"),
            Array(signature) == [0x50, 0x4B, 0x03, 0x04],
            let directory = try? access.zipCentralDirectory()
        else { return nil }
        return ZipStoredNames(directory: directory.bytes, count: directory.count)
    }

    /// Parses `count` central directory entries of `d`; nil when no name holds a
    /// backslash, or when an entry is damaged.
    init?(directory d: [UInt8], count: Int64) {
        var stored: [(name: [UInt8], offset: Int64)] = []
        var p = 0
        for _ in 0..<count {
            guard p + 46 <= d.count, ArchiveOffsetReader.u32(d, p) == 0x0201_4b50 else { return nil }
            let nameLength = Int(ArchiveOffsetReader.u16(d, p + 28))
            let extraLength = Int(ArchiveOffsetReader.u16(d, p + 30))
            let end = p + 46 + nameLength + extraLength + Int(ArchiveOffsetReader.u16(d, p + 32))
            guard end <= d.count else { return nil }
            let name = Array(d[(p + 46)..<(p + 46 + nameLength)])
            stored.append((name, Self.localHeaderOffset(d, entry: p, extra: (p + 46 + nameLength), extraLength)))
            p = end
        }
        let keys = Set(stored.filter { $0.name.contains(Self.backslash) }.map { Self.key($0.name) })
        guard !keys.isEmpty else { return nil }
        var candidates: [[UInt8]: [[UInt8]]] = [:]
        for entry in stored.sorted(by: { $0.offset < $1.offset }) {
            let key = Self.key(entry.name)
            if keys.contains(key) { candidates[key, default: []].append(entry.name) }
        }
        self.candidates = candidates
    }

    /// The stored name of the entry libarchive handed out next as `given`.
    mutating func storedName(for given: [UInt8]) -> [UInt8] {
        let key = Self.key(given)
        guard var list = candidates[key] else { return given }
        defer { candidates[key] = list }
        if given.contains(Self.backslash) {
            // Kept as stored (a name with a `/`, or one libarchive could not convert).
            if let i = list.firstIndex(of: given) { list.remove(at: i) }
            return given
        }
        // Either `given` itself or a name without `/` whose backslashes became slashes.
        guard let i = list.firstIndex(where: { $0 == given || !$0.contains(Self.slash) }) else { return given }
        return list.remove(at: i)
    }

    /// The stored name of the entry libarchive handed out as `given`, read from its local
    /// header: the first local header at or after upstream offset `after` in `recent`
    /// (which starts at upstream offset `start`) whose name libarchive could hand out as
    /// `given` (the same bytes with backslashes as slashes). Nil when `recent` holds none
    /// (libarchive's spelling then stays).
    static func localName(in recent: [UInt8], from start: Int64, after: Int64, given: [UInt8]) -> [UInt8]? {
        guard given.contains(slash) else { return nil } // only `/` may stand for a stored `\`
        var i = Int(max(0, after - start))
        let wanted = key(given)
        while i + 30 + given.count <= recent.count, i - Int(max(0, after - start)) <= 65_536 + 1024 {
            if recent[i] == 0x50, recent[i + 1] == 0x4B, recent[i + 2] == 0x03, recent[i + 3] == 0x04,
                Int(ArchiveOffsetReader.u16(recent, i + 26)) == given.count
            {
                let name = Array(recent[(i + 30)..<(i + 30 + given.count)])
                if key(name) == wanted { return name }
            }
            i += 1
        }
        return nil
    }

    /// A name with its backslashes as slashes: the names libarchive may hand out as one.
    private static func key(_ name: [UInt8]) -> [UInt8] {
        name.map { $0 == backslash ? slash : $0 }
    }

    /// The entry's local header offset (its zip64 extra field's when the entry gives
    /// 0xFFFFFFFF).
    private static func localHeaderOffset(_ d: [UInt8], entry p: Int, extra start: Int, _ length: Int) -> Int64 {
        let local = ArchiveOffsetReader.u32(d, p + 42)
        guard local == 0xFFFF_FFFF else { return Int64(local) }
        var e = start
        while e + 4 <= start + length {
            let id = ArchiveOffsetReader.u16(d, e)
            let n = Int(ArchiveOffsetReader.u16(d, e + 2))
            guard e + 4 + n <= start + length else { break }
            if id == 0x0001 {
                // Present in this order, each only when its 32-bit field is 0xFFFFFFFF.
                var q = e + 4
                if ArchiveOffsetReader.u32(d, p + 24) == 0xFFFF_FFFF { q += 8 }
                if ArchiveOffsetReader.u32(d, p + 20) == 0xFFFF_FFFF { q += 8 }
                if q + 8 <= e + 4 + n { return Int64(bitPattern: ArchiveOffsetReader.u64(d, q)) }
            }
            e += 4 + n
        }
        return Int64(local)
    }
}
