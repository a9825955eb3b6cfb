import BlobStreamSystem
import Foundation

/// Lists the files of a library folder. Hidden entries (names starting with `.`) are
/// skipped; symbolic links are followed (`stat`); order is by path, byte-wise.
enum DirectoryWalker {
    /// The names of the folders directly inside `path` (none when it cannot be listed).
    static func subfolders(of path: String) -> [String] {
        entries(of: path).filter { name in
            if case .success(let id) = FileStatus.at(path + "/" + name) { return id.isDirectory }
            return false
        }
    }

    /// Every regular file under `base` at any depth whose name has an extension, as paths
    /// relative to `base`, sorted.
    static func files(under base: String) -> [String] {
        var out: [String] = []
        walk(base, relative: "", depth: 0, into: &out)
        return out.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    private static func walk(_ base: String, relative: String, depth: Int, into out: inout [String]) {
        guard depth < 64 else { return }
        let folder = relative.isEmpty ? base : base + "/" + relative
        for name in entries(of: folder) {
            let rel = relative.isEmpty ? name : relative + "/" + name
            guard case .success(let id) = FileStatus.at(base + "/" + rel) else { continue }
            if id.isDirectory {
                walk(base, relative: rel, depth: depth + 1, into: &out)
            } else if id.isRegular, AssetNaming.ext(of: name) != nil {
                out.append(rel)
            }
        }
    }

    private static func entries(of path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { !$0.hasPrefix(".") }
    }
}
