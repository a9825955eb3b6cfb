// "No such member": the members whose names are close to the one asked for.

import BlobStream
import BlobStreamArchive
import Foundation

/// Finds the members of an archive whose names are close to a name that was not found, for
/// a failure message a user can act on ("did you mean …").
package enum MemberSuggestions {
    /// Archives read again to suggest names: local files up to this size (the search that
    /// failed has just read them; a larger or remote archive gets only the `ls` hint).
    static let largestArchiveSearched: Int64 = 256 << 20

    /// The hint for a `.notFound` failure of `url` (`archive:INNER!/MEMBER`, typed as
    /// `argument`): up to three member names close to MEMBER, in the spelling `ls` prints,
    /// and the `ls` command that lists them all. Nil when `url` is not an archive member's URL.
    package static func hint(for url: String, argument: String, registry: DataSourceRegistry) -> String? {
        guard BlobURL.scheme(of: url)?.lowercased() == ArchiveSources.scheme else { return nil }
        let body = BlobURL.removingScheme(url)
        guard let split = body.range(of: "!/", options: .backwards) else { return nil }
        let archiveURL = String(body[..<split.lowerBound])
        let listing = "'blobstream ls \(typedArchive(argument) ?? archiveURL)' lists the members"
        guard let wanted = try? BlobURL.percentDecodedBytes(String(body[split.upperBound...]), context: url),
            let path = try? BlobURL.path(ofFileURL: archiveURL),
            let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber,
            size.int64Value <= largestArchiveSearched,
            let entries = try? ArchiveListing.entries(of: registry.makeSource(url: archiveURL), name: path)
        else { return listing }
        let close = closest(to: wanted, in: entries.filter { $0.type != .directory }.map(\.pathBytes))
        guard !close.isEmpty else { return listing }
        let names = close.map { "'\(BlobURL.escapedName($0))'" }.joined(separator: ", ")
        return "did you mean \(names)? \(listing)"
    }

    /// The archive part of a member's SOURCE as typed (`x.tar` of `x.tar!/m` and of
    /// `archive:x.tar!/m`), shell-quoted when it needs to be.
    static func typedArchive(_ argument: String) -> String? {
        var text = Substring(argument)
        if BlobURL.scheme(of: argument)?.lowercased() == ArchiveSources.scheme {
            text = text.dropFirst("archive:".count)
        }
        guard let split = text.range(of: "!/", options: .backwards), split.lowerBound > text.startIndex else {
            return nil
        }
        let archive = String(text[..<split.lowerBound])
        let plain = archive.unicodeScalars.allSatisfy {
            $0.properties.isAlphabetic || ("0"..."9").contains($0) || "/._-:+=@,%".unicodeScalars.contains($0)
        }
        return plain ? archive : "'" + archive.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Up to three names close to `wanted`: the same ignoring case, a leading `./` or the
    /// folders, or within a small edit distance; the closest first.
    static func closest(to wanted: [UInt8], in names: [[UInt8]]) -> [[UInt8]] {
        func key(_ name: [UInt8]) -> [UInt8] {
            var n = name
            while n.starts(with: Array("./".utf8)) { n.removeFirst(2) }
            return n.map { (0x41...0x5A).contains($0) ? $0 + 32 : $0 }
        }
        func base(_ name: [UInt8]) -> [UInt8] { Array(key(name).split(separator: UInt8(ascii: "/")).last ?? []) }
        let target = key(wanted)
        let limit = max(1, min(3, target.count / 3))
        var scored: [(Int, [UInt8])] = []
        for name in names where name != wanted {
            let k = key(name)
            let score: Int
            if k == target {
                score = 0
            } else if !base(name).isEmpty, base(name) == base(wanted) {
                score = 1
            } else {
                let d = distance(k, target, atMost: limit)
                guard d <= limit else { continue }
                score = 1 + d
            }
            scored.append((score, name))
        }
        return scored.sorted { $0.0 < $1.0 }.prefix(3).map(\.1)
    }

    /// The edit distance (insertions, deletions, substitutions, and swaps of two
    /// neighbours, each counting 1), stopping early once every path exceeds `atMost`.
    static func distance(_ a: [UInt8], _ b: [UInt8], atMost: Int) -> Int {
        if abs(a.count - b.count) > atMost { return atMost + 1 }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], before[j - 2] + 1)
                }
            }
            if current.min()! > atMost { return atMost + 1 }
            before = previous
            previous = current
        }
        return previous[b.count]
    }
}
