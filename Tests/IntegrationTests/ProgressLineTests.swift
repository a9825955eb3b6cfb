import Foundation
import NginxTestServer
import Testing

/// The progress line and summary of `cat` and `upload` on stderr: drawn only on a terminal (a pty from
/// util-linux's `script`), never into a pipe, never with `--quiet`.
@Suite("cat: progress and summary on a terminal only")
struct ProgressLineTests {
    /// Two bytes from a pipe: the second only once the tool has read the first and then 1.2 s
    /// later, long enough to draw. Waiting for the first byte to be read (the pipe empty, by
    /// `FIONREAD`) keeps a slow start of the tool (ThreadSanitizer, a loaded machine) out of
    /// the pause; after a minute it is written anyway, and the test fails on what it sees.
    static func slowInput(pause: Double = 1.2) -> String {
        """
        python3 -c "
        import fcntl, os, struct, termios, time
        os.write(1, b\\"a\\")
        waited = time.monotonic()
        while time.monotonic() - waited < 60 and struct.unpack(\\"i\\", fcntl.ioctl(1, termios.FIONREAD, b\\"0000\\"))[0]:
            time.sleep(0.02)
        time.sleep(\(pause))
        os.write(1, b\\"b\\")
        "
        """
    }

    @Test("stderr a pipe: nothing but the bytes")
    func notATerminal() async throws {
        let r = try await Tool.shell("\(Self.slowInput()) | \"$BLOBSTREAM\" cat")
        #expect(r.status == 0 && r.text == "ab")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
    }

    @Test("stderr a terminal: a progress line, erased, then a summary; --quiet: nothing")
    func onATerminal() async throws {
        func underScript(_ flags: String) async throws -> Tool.Result {
            try await Tool.shell(
                "script -q -e -c '\(Self.slowInput()) | \"$BLOBSTREAM\" cat \(flags) > /dev/null' /dev/null < /dev/null"
            )
        }
        let shown = try await underScript("")
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.text.contains("\r\u{1B}[K-  2 B"), "the progress line: \(shown.text.debugDescription)")
        // The time is checked for its form only: the tool's clock starts when it is running,
        // which under ThreadSanitizer can be after the first byte was written (0.96 s seen).
        #expect(
            shown.text.contains(#/-: 2 B in [0-9]+\.[0-9]{2} s \([0-9.]+ B/s\)/#),
            "the summary: \(shown.text.debugDescription)")
        let quiet = try await underScript("--quiet")
        #expect(quiet.status == 0)
        #expect(quiet.text.isEmpty, "\(quiet.text.debugDescription)")
    }

    @Test("upload: a progress line and a summary on a terminal; into a pipe or with --quiet, nothing on stderr")
    func upload() async throws {
        let server = try NginxTestServer()
        defer { server.stop() }
        func send(_ name: String, _ flags: String, terminal: Bool) async throws -> Tool.Result {
            let command =
                "\(Self.slowInput()) | \"$BLOBSTREAM\" upload \(flags) - --to \(server.baseURL)/files/\(name)"
            return try await Tool.shell(terminal ? "script -q -e -c '\(command)' /dev/null < /dev/null" : command)
        }
        let shown = try await send("shown.txt", "", terminal: true)
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.text.contains("\r\u{1B}[Kupload -  2 B"), "the progress line: \(shown.text.debugDescription)")
        #expect(shown.text.contains("uploaded 2 B in "), "the summary: \(shown.text.debugDescription)")
        let piped = try await send("piped.txt", "", terminal: false)
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
        let quiet = try await send("quiet.txt", "--quiet", terminal: true)
        #expect(quiet.status == 0)
        #expect(quiet.text.isEmpty, "\(quiet.text.debugDescription)")
        for name in ["shown.txt", "piped.txt", "quiet.txt"] {
            #expect(server.stored(name) == Data("ab".utf8), "\(name)")
        }
    }
}
