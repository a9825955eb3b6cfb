// `blobstream checksum --check LIST...`: sha256sum -c.

import BlobStream
import BlobStreamCLI
import Foundation

extension Checksum {
    /// What checking the lists found, for the summary.
    struct CheckTally {
        var misformatted = 0
        var unreadable = 0
        var mismatched = 0
    }

    /// Checks each list as `sha256sum -c` does: `NAME: OK` / `NAME: FAILED` / `NAME: FAILED
    /// open or read` on stdout, the reason a file could not be read and the summary
    /// warnings on stderr; fails (status 1) when a file did not match or could not be read,
    /// or a list holds no line in the form.
    /// One registry serves the whole run (the lists and every file they name): the time per
    /// line stays the same however long the list.
    func runCheck() throws {
        let registry = try options.makeRegistry(
            remote: RunConnections(caBundle: options.caBundle).remote(s3: s3.settings))
        var failed = false
        var listReadable = true
        var separator = ChecksumLine.Separator.undecided
        for list in sources {
            var text = Data()
            do {
                try options.forEachStream([list], registry: registry) { _, pumpBytes in
                    try pumpBytes { text.append(contentsOf: $0) }
                }
            } catch let error as ToolFailure where error.alreadyReported {
                listReadable = false
                continue
            }
            var tally = CheckTally()
            var formatted = 0
            for raw in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                if raw.isEmpty { continue }
                guard
                    let line = ChecksumLine(
                        parsing: Substring(decoding: raw, as: UTF8.self), hexLength: algorithm.hexLength,
                        tag: algorithm.tag, separator: &separator)
                else {
                    tally.misformatted += 1
                    continue
                }
                formatted += 1
                try check(line, registry: registry, &tally)
            }
            if formatted == 0 {
                let name = list == "-" ? "'standard input'" : list
                Console.error(
                    "\(name): no properly formatted checksum lines found (--algorithm \(algorithm.rawValue): '<\(algorithm.hexLength) hex digits>  NAME' lines, as \(algorithm.referenceTool) writes them)"
                )
                failed = true
                continue
            }
            if !status { summarize(tally) }
            failed = failed || tally.unreadable > 0 || tally.mismatched > 0
        }
        if failed || !listReadable { throw ToolFailure(message: "", alreadyReported: true) }
    }

    /// Reads the file a line names and reports whether its digest matches.
    private func check(_ line: ChecksumLine, registry: DataSourceRegistry, _ tally: inout CheckTally) throws {
        let name = ChecksumLine.checkedName(line.name)
        var actual: String?
        do {
            try options.forEachStream([line.name], registry: registry) { _, pumpBytes in
                actual = try digest(pumpBytes)
            }
        } catch let error as ToolFailure where error.alreadyReported {
            actual = nil // the reason is on stderr already
        }
        guard let actual else {
            tally.unreadable += 1
            if !status { try Console.print("\(name): FAILED open or read\n") }
            return
        }
        if actual == line.hex {
            if !status && !quiet { try Console.print("\(name): OK\n") }
        } else {
            tally.mismatched += 1
            if !status { try Console.print("\(name): FAILED\n") }
        }
    }

    /// The warnings `sha256sum -c` ends with, on stderr.
    private func summarize(_ tally: CheckTally) {
        func count(_ n: Int, _ one: String, _ many: String) -> String { n == 1 ? "1 \(one)" : "\(n) \(many)" }
        if tally.misformatted > 0 {
            Console.error("WARNING: " + count(tally.misformatted, "line is", "lines are") + " improperly formatted")
        }
        if tally.unreadable > 0 {
            Console.error(
                "WARNING: " + count(tally.unreadable, "listed file", "listed files") + " could not be read")
        }
        if tally.mismatched > 0 {
            Console.error(
                "WARNING: " + count(tally.mismatched, "computed checksum", "computed checksums") + " did NOT match")
        }
    }
}
