import BlobStream
import Foundation
import Glibc

/// Writes to the standard streams without buffering surprises.
package enum Console {
    /// One line on stderr, prefixed with the tool's name. Control characters in the message
    /// (a name with a newline or an escape sequence) are percent-encoded: one line, and
    /// nothing reaches the terminal but text. A URL's password (`http://user:secret@host/`)
    /// is left out, as curl shows it: the line may go to a log. The library's options are
    /// named by the tool's flags (`ToolWording`).
    package static func error(_ message: String) {
        let text = ToolWording.inToolTerms(BlobURL.redactingPasswords(message))
        writeError("blobstream: \(BlobURL.escapedText(text))\n")
    }

    /// Writes `text` to stderr with `write(2)`. A stderr that cannot take it (closed:
    /// EBADF; a pipe whose reader is gone: EPIPE; a full disk) loses the text, never the
    /// run: the command still ends with its own exit status. (`FileHandle.write` traps on
    /// such an error.)
    package static func writeError(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var done = 0
            while done < bytes.count {
                let n = Glibc.write(2, bytes.baseAddress! + done, bytes.count - done)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return }
                done += n
            }
        }
    }

    /// When the program was started with stderr closed (`2>&-`), puts `/dev/null` in its
    /// place, so that no file the run opens gets descriptor 2 and has error lines written
    /// into it. Called first thing by `CommandMain.run`.
    package static func keepStderrDescriptor() {
        guard fcntl(2, F_GETFD) == -1, errno == EBADF else { return }
        let null = open("/dev/null", O_WRONLY)
        // 0 or 1 closed too: the lowest free descriptor was not 2.
        if null >= 0, null != 2, dup2(null, 2) == 2 { close(null) }
    }

    /// A note on stderr (`--verbose`), written as `error` writes a line.
    package static func note(_ message: String) { error(message) }

    /// Writes all of `buffer` to stdout; throws `StdoutClosed` when the reader went away.
    package static func writeOut(_ buffer: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < buffer.count {
            let n = Glibc.write(1, buffer.baseAddress! + done, buffer.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { throw StdoutClosed() }
                throw ToolFailure(message: "cannot write to standard output: \(String(cString: strerror(errno)))")
            }
            done += n
        }
    }

    /// Standard output is a pipe (or a FIFO): its reader takes what `sendOut` moves.
    package static var stdoutIsPipe: Bool {
        var status = stat()
        return fstat(1, &status) == 0 && (status.st_mode & S_IFMT) == S_IFIFO
    }

    /// Before writing a lot into a pipe: makes its buffer 1 MiB (Linux's default is 64 KiB,
    /// so a writer and its reader take turns every 64 KiB), when the system allows that size
    /// to this user. Never shrinks it; a refusal changes nothing.
    package static func widenStdoutPipe() {
        // F_GETPIPE_SZ and F_SETPIPE_SZ (Linux), which Glibc's Swift module does not name.
        let getSize: Int32 = 1032
        let setSize: Int32 = 1031
        let wanted: Int32 = 1 << 20
        let size = fcntl(1, getSize)
        if size >= 0, size < wanted { _ = fcntl(1, setSize, wanted) }
    }

    /// Moves up to `count` bytes at `offset` of the regular file `descriptor` to stdout
    /// (a pipe) with `sendfile`: the kernel passes them on without a copy through this
    /// process. Returns how many were moved, 0 when `sendfile` cannot (the caller then reads
    /// and writes them); throws `StdoutClosed` when the reader went away.
    package static func sendOut(from descriptor: Int32, offset: Int64, count: Int64) throws -> Int64 {
        var position = Int(offset)
        let chunk = Int(min(count, 8 << 20))
        while true {
            let n = sendfile(1, descriptor, &position, chunk)
            if n >= 0 { return Int64(n) }
            if errno == EINTR { continue }
            if errno == EPIPE { throw StdoutClosed() }
            return 0 // EINVAL, ENOSYS, EAGAIN (a non-blocking stdout): write instead
        }
    }

    /// Writes a string to stdout.
    package static func print(_ text: String) throws {
        var text = text
        try text.withUTF8 { try writeOut(UnsafeRawBufferPointer($0)) }
    }

    package static var stderrIsTerminal: Bool { isatty(2) == 1 }

}

/// A progress line on stderr, only when stderr is a terminal (and not `quiet`) and the work
/// has lasted a moment (half a second); redrawn at most ten times a second, erased at the
/// end. When it was drawn, `finish(summary: true)` leaves one summary line in its place:
/// `LABEL: BYTES in SECONDS s (RATE/s)`.
package final class ProgressLine {
    private let label: String
    private let total: Int64?
    private let start = Date()
    private var last = Date.distantPast
    private var shown = false
    private let enabled: Bool
    private var done: Int64 = 0

    /// A line for `label`'s bytes out of `total` (nil: unknown); none with `quiet` (`--quiet`).
    package init(label: String, total: Int64?, quiet: Bool = false) {
        self.label = label
        self.total = total
        enabled = Console.stderrIsTerminal && !quiet
    }

    package func update(_ done: Int64) {
        self.done = done
        guard enabled else { return }
        let now = Date()
        guard now.timeIntervalSince(start) > 0.5, now.timeIntervalSince(last) > 0.1 else { return }
        last = now
        shown = true
        let rate = Double(done) / max(now.timeIntervalSince(start), 0.001)
        var line = "\(label)  \(Self.size(done))"
        if let total, total > 0 {
            let fraction = min(Double(done) / Double(total), 1)
            let width = 24
            let filled = Int(fraction * Double(width))
            line +=
                " / \(Self.size(total)) [" + String(repeating: "#", count: filled)
                + String(repeating: "-", count: width - filled) + "] \(Int(fraction * 100))%"
        }
        line += "  \(Self.size(Int64(rate)))/s"
        Console.writeError("\r\u{1B}[K" + line)
    }

    /// Erases the line if it was drawn; with `summary`, then writes the summary line
    /// (only when the line was drawn: a short piece of work says nothing).
    package func finish(summary: Bool = false) {
        guard shown else { return }
        shown = false
        var text = "\r\u{1B}[K"
        if summary {
            let seconds = max(Date().timeIntervalSince(start), 0.001)
            text +=
                "\(BlobURL.escapedText(label)): \(Self.size(done)) in \(String(format: "%.2f", seconds)) s (\(Self.size(Int64(Double(done) / seconds)))/s)\n"
        }
        Console.writeError(text)
    }

    package static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}
