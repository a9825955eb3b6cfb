import Foundation

/// Names, ids and types of assets in a directory library.
enum AssetNaming {
    /// The extension of a file name (`JPG` for `IMG_0001.JPG`), nil when it has none.
    static func ext(of name: String) -> String? {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        let ext = name[name.index(after: dot)...]
        return ext.isEmpty ? nil : String(ext)
    }

    /// The stable id of the asset at `relativePath` under `originals/`: 128 bits of a hash of
    /// the path's UTF-8 bytes, written like a UUID (`9F983DBA-EC35-42B8-8773-B597CF782EDD`).
    static func id(forRelativePath relativePath: String) -> String {
        let bytes = Array(relativePath.utf8)
        let (a, b) = bytes.withUnsafeBytes { raw in
            (ContentHash.hash(raw, seed: 0x243F_6A88_85A3_08D3), ContentHash.hash(raw, seed: 0x1319_8A2E_0370_7344))
        }
        let hex = String(format: "%016llX%016llX", a, b)
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-"
            + String(c[16..<20]) + "-" + String(c[20..<32])
    }

    /// The uniform type identifier for an extension (`public.data` when unknown).
    static func uti(forExtension ext: String) -> String {
        switch ext.lowercased() {
        case "jpg", "jpeg": "public.jpeg"
        case "heic": "public.heic"
        case "png": "public.png"
        case "gif": "com.compuserve.gif"
        case "tif", "tiff": "public.tiff"
        case "dng": "com.adobe.raw-image"
        case "mov": "com.apple.quicktime-movie"
        case "mp4": "public.mpeg-4"
        case "m4v": "com.apple.m4v-video"
        default: "public.data"
        }
    }
}

/// A fast 64-bit non-cryptographic hash (multiply–xorshift over 8-byte words), for ids and
/// change detection; never for security.
enum ContentHash {
    static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        var h = Hasher64(seed: seed)
        h.combine(bytes)
        return h.finalize()
    }

    struct Hasher64 {
        private var h: UInt64
        private var count: UInt64 = 0
        init(seed: UInt64) { h = seed ^ 0x9E37_79B9_7F4A_7C15 }

        mutating func combine(_ bytes: UnsafeRawBufferPointer) {
            let n = bytes.count
            var i = 0
            while i + 8 <= n {
                mix(bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                i += 8
            }
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while i < n {
                tail |= UInt64(bytes[i]) << shift
                shift += 8
                i += 1
            }
            if shift > 0 { mix(tail ^ (shift << 56)) }
            count &+= UInt64(n)
        }

        private mutating func mix(_ word: UInt64) {
            h = (h ^ word) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 32
        }

        func finalize() -> UInt64 {
            var x = h ^ count
            x ^= x >> 33
            x = x &* 0xC4CE_B9FE_1A85_EC53
            x ^= x >> 33
            return x
        }
    }
}
