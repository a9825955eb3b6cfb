import BlobStream
import BlobStreamSystem
import Crypto
import Foundation

/// A secret key that seals indexes (HMAC-SHA256, `IndexSeal`): with a key set, an index is
/// used only when it carries a seal made with this key for the source it indexes, so that
/// whoever can write an index file or object but does not hold the key cannot change what a
/// read through it gives.
///
/// ```swift
/// let key = try IndexKey(text: "3f1c…")          // 64 hex digits, or base64 of 32 bytes
/// var sources = BlobSources(remote: StoreSchemes())
/// sources.indexKey = key                           // reads use only indexes sealed with it
/// ```
///
/// The tool reads it from `BLOBSTREAM_INDEX_KEY` (`environmentVariable`): the key's bytes in
/// hex (`openssl rand -hex 32`) or in base64 (`openssl rand -base64 32`), at least 32 bytes.
public struct IndexKey: Sendable, Equatable {
    /// The key's bytes.
    let bytes: [UInt8]

    /// The fewest bytes a key may have: 32 (256 bits, the size of an HMAC-SHA256 tag).
    public static let minimumByteCount = 32

    /// The environment variable the tool reads its key from.
    public static let environmentVariable = "BLOBSTREAM_INDEX_KEY"

    /// A key of these bytes.
    ///
    /// - Throws: `BlobStreamError` `.unsupported` when there are fewer than
    ///   `minimumByteCount` of them (saying how many).
    public init(bytes: some DataProtocol) throws(BlobStreamError) {
        guard bytes.count >= Self.minimumByteCount else {
            throw BlobStreamError(
                .unsupported,
                "an index key needs at least \(Self.minimumByteCount) bytes, this one has \(bytes.count) (make one with: openssl rand -hex 32)"
            )
        }
        self.bytes = [UInt8](bytes)
    }

    /// A key written as text: hex when the text is only hex digits, an even number of them
    /// (`openssl rand -hex 32`), else base64 (`openssl rand -base64 32`); spaces and line
    /// ends around it are ignored.
    ///
    /// - Throws: `BlobStreamError` `.unsupported` when the text is neither, or gives fewer
    ///   than `minimumByteCount` bytes. The message never repeats the text.
    public init(text: String) throws(BlobStreamError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let digits = Array(trimmed.utf8)
        if !digits.isEmpty, digits.count % 2 == 0, digits.allSatisfy({ Self.hexValue($0) != nil }) {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(digits.count / 2)
            for i in stride(from: 0, to: digits.count, by: 2) {
                bytes.append(Self.hexValue(digits[i])! << 4 | Self.hexValue(digits[i + 1])!)
            }
            try self.init(bytes: bytes)
        } else if !trimmed.isEmpty, let decoded = Data(base64Encoded: trimmed) {
            try self.init(bytes: decoded)
        } else {
            throw BlobStreamError(
                .unsupported,
                "an index key is written in hex or in base64 of at least \(Self.minimumByteCount) bytes (make one with: openssl rand -hex 32); this one is neither"
            )
        }
    }

    /// The key `environment` sets in `BLOBSTREAM_INDEX_KEY`; nil when it is not set.
    ///
    /// - Throws: what `init(text:)` throws (an empty value too), naming the variable.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(BlobStreamError) -> IndexKey?
    {
        guard let text = environment[environmentVariable] else { return nil }
        do {
            return try IndexKey(text: text)
        } catch {
            throw BlobStreamError(error.code, "\(environmentVariable): \(error.message)", cause: error)
        }
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
}

/// The seal of an index: an HMAC-SHA256 tag, made with an `IndexKey`, appended to the index's
/// bytes as a fixed trailer of 41 bytes:
///
/// ```
/// "BSIDXMAC" (8) | version u8 (1) | tag (32)
/// ```
///
/// The tag covers, in this order: the text `BlobStream index seal 1` and a 0 byte; the kind
/// (`gzidx`, `blobidx`, `zstidx`) and a 0 byte; the identity of the source the index was made
/// for, as the index records it (an object's size u64 and its strong ETag, length u16 and
/// UTF-8; a file's size u64, modification time i64 seconds and u32 nanoseconds, and sampled
/// CRC-32s, count u32 and each u32; none for a foreign gzip index); the index's length u64;
/// and every byte of the index (all little-endian). Every format is sealed the same way, its
/// bytes unchanged: a reader strips the trailer before the format's decoder sees them.
///
/// Without a key a sealed index is read as before (its trailer set aside, the tag not
/// checked). With a key the index is read whole, its tag checked, and only then decoded;
/// the locator (`LocatableIndex.lookUp`) does not use an index without a seal or whose tag
/// does not verify. The builds before this one take a sealed index for a damaged one.
public enum IndexSeal {
    /// The trailer's first bytes.
    public static let magic: [UInt8] = Array("BSIDXMAC".utf8)
    /// The trailer's version.
    public static let version: UInt8 = 1
    /// The trailer's length: magic, version, a 32-byte tag.
    public static let trailerLength = 8 + 1 + 32

    /// `bytes` (an index of `kind`, made for the source `identity` describes) followed by
    /// their seal with `key`. Bytes that end in a seal already are sealed again, not twice.
    public static func sealed(
        _ bytes: [UInt8], kind: IndexCache.Kind, madeFor identity: BlobContentIdentity?, key: IndexKey
    ) -> [UInt8] {
        let index = split(bytes).index
        var out = [UInt8]()
        out.reserveCapacity(index.count + trailerLength)
        out += index
        out += magic
        out.append(version)
        out += tag(of: index, kind: kind, madeFor: identity, key: key)
        return out
    }

    /// Whether `bytes` end in a seal (which is not checked).
    public static func isSealed(_ bytes: some Collection<UInt8>) -> Bool {
        guard bytes.count >= trailerLength else { return false }
        let trailer = bytes.suffix(trailerLength)
        return trailer.prefix(magic.count).elementsEqual(magic) && trailer.dropFirst(magic.count).first == version
    }

    /// The index's own bytes and its tag, when `bytes` end in a seal.
    package static func split(_ bytes: [UInt8]) -> (index: ArraySlice<UInt8>, tag: ArraySlice<UInt8>?) {
        guard isSealed(bytes) else { return (bytes[...], nil) }
        return (bytes.dropLast(trailerLength), bytes.suffix(32))
    }

    /// `bytes` without their seal (the same array when they have none).
    package static func withoutSeal(_ bytes: [UInt8]) -> [UInt8] {
        isSealed(bytes) ? Array(bytes.dropLast(trailerLength)) : bytes
    }

    /// The length of the index in the `length` bytes of `store`: without the seal at its end,
    /// when it has one. Reads its last 41 bytes (for an index object, from the first answer or
    /// the end asked for beside it: `SourceIndexBytes` reads its start first).
    package static func unsealedLength(of store: any IndexByteStore, length: Int64) throws(BlobStreamError) -> Int64 {
        guard length >= Int64(trailerLength) else { return length }
        var trailer: [UInt8]
        if let source = store as? SourceIndexBytes {
            // The first request brings the start; a short index is whole in it.
            let start = try source.start(atLeast: 1, what: "index")
            trailer =
                Int64(start.count) >= length
                ? Array(start[Int(length) - trailerLength..<Int(length)])
                : try store.bytes(count: trailerLength, at: length - Int64(trailerLength), what: "index seal")
        } else {
            trailer = try store.bytes(count: trailerLength, at: length - Int64(trailerLength), what: "index seal")
        }
        return isSealed(trailer) ? length - Int64(trailerLength) : length
    }

    /// Checks the seal of `bytes` with `key`: their tag must be the one `key` makes for the
    /// index's bytes, `kind` and `identity` (what the index, decoded, records).
    ///
    /// - Throws: `BlobStreamError` naming the index (`name`): `.unsupported` when it carries
    ///   no seal, `.corrupt` when its tag does not verify (another key, a changed byte, or
    ///   another identity than it was sealed with).
    package static func check(
        _ bytes: [UInt8], name: String, kind: IndexCache.Kind, madeFor identity: BlobContentIdentity?,
        key: IndexKey
    ) throws(BlobStreamError) {
        let (index, tag) = split(bytes)
        guard let tag else {
            throw BlobStreamError(
                .unsupported,
                "the \(kind.noun) \(name) is not sealed, and an index key is set (\(IndexKey.environmentVariable)): only an index sealed with it is used"
            )
        }
        var mac = HMAC<SHA256>(key: SymmetricKey(data: key.bytes))
        feed(&mac, index: index, kind: kind, madeFor: identity)
        guard mac.finalize() == tag else {
            throw BlobStreamError(
                .corrupt,
                "the seal of the \(kind.noun) \(name) does not verify with the index key (\(IndexKey.environmentVariable)): it was sealed with another key, or changed since"
            )
        }
    }

    /// The tag `key` makes for the index `bytes` of `kind`, made for `identity`.
    static func tag(
        of bytes: ArraySlice<UInt8>, kind: IndexCache.Kind, madeFor identity: BlobContentIdentity?, key: IndexKey
    ) -> [UInt8] {
        var mac = HMAC<SHA256>(key: SymmetricKey(data: key.bytes))
        feed(&mac, index: bytes, kind: kind, madeFor: identity)
        return Array(mac.finalize())
    }

    /// What the tag covers (see the type's discussion), into `mac`.
    private static func feed(
        _ mac: inout HMAC<SHA256>, index: ArraySlice<UInt8>, kind: IndexCache.Kind,
        madeFor identity: BlobContentIdentity?
    ) {
        var head: [UInt8] = Array("BlobStream index seal 1".utf8) + [0] + Array(kind.rawValue.utf8) + [0]
        func put(_ value: UInt64, _ count: Int) {
            for i in 0..<count { head.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
        }
        switch identity {
        case nil:
            head.append(0)
        case let identity? where identity.entityTag != nil:
            let tag = Array(identity.entityTag!.utf8)
            head.append(1)
            put(UInt64(bitPattern: identity.size), 8)
            put(UInt64(tag.count), 2)
            head += tag
        case let identity?:
            head.append(2)
            put(UInt64(bitPattern: identity.size), 8)
            put(UInt64(bitPattern: identity.modified.seconds), 8)
            put(UInt64(UInt32(truncatingIfNeeded: identity.modified.nanoseconds)), 4)
            put(UInt64(identity.sampleCRC32s.count), 4)
            for crc in identity.sampleCRC32s { put(UInt64(crc), 4) }
        }
        put(UInt64(index.count), 8)
        mac.update(data: head)
        index.withUnsafeBytes { mac.update(data: $0) }
    }
}

extension LocatableIndex {
    /// `bytes`, this index's own (`GzipIndex.serialized()`, `ArchiveIndex.encoded()`,
    /// `ZstdFrameIndex.encoded()`), sealed with `key` for the source it was made for
    /// (`IndexSeal`); unchanged without a key.
    ///
    /// ```swift
    /// let bytes = index.sealing(index.encoded(), with: try IndexKey.fromEnvironment())
    /// ```
    public func sealing(_ bytes: [UInt8], with key: IndexKey?) -> [UInt8] {
        guard let key else { return bytes }
        return IndexSeal.sealed(bytes, kind: Self.kind, madeFor: madeFor, key: key)
    }
}
