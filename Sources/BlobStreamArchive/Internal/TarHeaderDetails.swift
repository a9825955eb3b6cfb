import BlobStream

/// What an uncompressed tar's headers say that libarchive (3.6) does not hand out, and GNU
/// tar and Python's tarfile show: the type flag (`7`, a contiguous file, is a plain file to
/// libarchive), a directory's size field (libarchive gives 0; no data follows it for any of
/// them), and the owner and group that pax records set, a global header's (`g`) included
/// (libarchive ignores global headers; GNU tar applies the last one's records to every entry
/// after it, unless an entry's own `x` header sets the same key).
struct TarHeaderDetails {
    /// The entry's header type flag.
    var typeFlag: UInt8
    /// The header's size field (a pax `size` record's when there is one).
    var size: Int64
    /// pax `uname` and `gname` records (the entry's own, else the last global header's).
    var owner: [UInt8]?
    var group: [UInt8]?
    /// pax `uid` and `gid` records (as for the names).
    var uid: Int64?
    var gid: Int64?

    /// The keys of pax records kept here.
    private static let keys: Set<String> = ["uname", "gname", "uid", "gid"]

    /// The details of each entry of the uncompressed tar that `reader` reads, by the offset
    /// of the entry's first header (its extension headers included: libarchive's header
    /// position). The walk stops, keeping what it found, at the first thing it does not
    /// follow (a damaged header, a multi-volume entry or volume label, a large extension header);
    /// empty when the bytes do not start with a tar header. The reader is left at offset 0.
    static func read(from reader: BlobUpstreamReader, length: Int64) -> [Int64: TarHeaderDetails] {
        defer { _ = try? reader.seek(to: 0) }
        guard TarHeaderWalker.startsWithTarHeader(reader, length: length) else { return [:] }
        var found: [Int64: TarHeaderDetails] = [:]
        var global: [String: [UInt8]] = [:]
        var offset: Int64 = 0
        var chainStart: Int64 = 0
        var own: [String: [UInt8]] = [:]
        var paxSize: Int64?
        while let header = Self.header(reader, at: offset, length: length) {
            // Solaris tar's `X` is a pax extended header under an older letter (GNU tar and
            // libarchive read it as `x`).
            let flag = header.bytes[156] == UInt8(ascii: "X") ? UInt8(ascii: "x") : header.bytes[156]
            let headerSize = header.size
            let dataOffset = offset + 512
            switch flag {
            case UInt8(ascii: "x"), UInt8(ascii: "g"):
                guard headerSize <= TarHeaderWalker.maximumExtensionSize,
                    let data = Self.data(reader, at: dataOffset, count: Int(headerSize), length: length),
                    let records = try? TarHeaderWalker.paxRecords(data, at: dataOffset)
                else { return found }
                // GNU tar: a global header's records replace the last one's (a key it leaves
                // out is no longer set), and an empty value is kept (an empty `uname` lists
                // the uid).
                if flag == UInt8(ascii: "g") { global = [:] }
                for (key, value) in records {
                    if flag == UInt8(ascii: "x"), key == "size" {
                        paxSize = Int64(String(decoding: value, as: UTF8.self))
                    }
                    guard Self.keys.contains(key) else { continue }
                    if flag == UInt8(ascii: "x") { own[key] = value } else { global[key] = value }
                }
                offset = dataOffset + TarHeaderWalker.padded(headerSize)
            case UInt8(ascii: "L"), UInt8(ascii: "K"):
                offset = dataOffset + TarHeaderWalker.padded(headerSize)
            case UInt8(ascii: "M"), UInt8(ascii: "V"):
                return found
            default:
                let records = global.merging(own) { _, entry in entry }
                func number(_ key: String) -> Int64? {
                    records[key].flatMap { Int64(String(decoding: $0, as: UTF8.self)) }
                }
                // The bytes stored after the header: the size field (a pax `size` record's),
                // which for a sparse file (pax `GNU.sparse` records or an old GNU `S`
                // header) counts the stored stretches and, in pax sparse 1.0, their map.
                let size = paxSize ?? headerSize
                found[chainStart] = TarHeaderDetails(
                    typeFlag: flag, size: size, owner: records["uname"], group: records["gname"], uid: number("uid"),
                    gid: number("gid"))
                // An old GNU sparse header may be followed by extension headers of its map
                // (byte 482 of the header, then byte 504 of each, says another follows).
                var stored = dataOffset
                if flag == UInt8(ascii: "S") {
                    var more = header.bytes[482] != 0
                    while more {
                        guard let block = Self.data(reader, at: stored, count: 512, length: length) else {
                            return found
                        }
                        stored += 512
                        more = block[504] != 0
                    }
                }
                // GNU tar and Python skip the data of every entry but a directory's.
                offset = stored + (flag == UInt8(ascii: "5") ? 0 : TarHeaderWalker.padded(size))
                chainStart = offset
                own = [:]
                paxSize = nil
            }
        }
        return found
    }

    /// The 512-byte header at `offset` and its size field; nil at the end marker, the
    /// upstream's end, or a header that is damaged.
    private static func header(_ reader: BlobUpstreamReader, at offset: Int64, length: Int64) -> (
        bytes: [UInt8], size: Int64
    )? {
        guard let bytes = data(reader, at: offset, count: 512, length: length) else { return nil }
        return bytes.withUnsafeBytes { header in
            guard !header.allSatisfy({ $0 == 0 }), TarHeaderFields.checksumMatches(header),
                let size = TarHeaderFields.number(header, 124, 12), size >= 0
            else { return nil }
            return (bytes, size)
        }
    }

    /// `count` bytes at `offset`; nil when the upstream cannot give them.
    private static func data(_ reader: BlobUpstreamReader, at offset: Int64, count: Int, length: Int64) -> [UInt8]? {
        guard offset + Int64(count) <= length, (try? reader.seek(to: offset)) != nil else { return nil }
        guard case .bytes(let bytes) = reader.fill(atLeast: count, waiting: true), bytes.count >= count else {
            return nil
        }
        return Array(bytes[0..<count])
    }

    /// `entry` with these details: the type flag, a directory's size, the pax owner and
    /// group (names and ids) when records set them.
    func applied(to entry: ArchiveEntry) -> ArchiveEntry {
        var entry = entry
        entry.tarTypeFlag = typeFlag
        if entry.type == .directory { entry.size = size }
        if owner != nil || group != nil || uid != nil || gid != nil {
            var ownership = entry.ownership ?? ArchiveEntry.Ownership(uid: 0, gid: 0)
            if let uid { ownership.uid = uid }
            if let gid { ownership.gid = gid }
            if let owner { ownership.owner = owner.isEmpty ? nil : String(decoding: owner, as: UTF8.self) }
            if let group { ownership.group = group.isEmpty ? nil : String(decoding: group, as: UTF8.self) }
            entry.ownership = ownership
        }
        return entry
    }
}
