import Foundation
import Testing

/// `blobstream --version`, the CHANGELOG section of that version, the licence, and the shell
/// completion scripts swift-argument-parser writes.
@Suite("--version, CHANGELOG, LICENSE, completion scripts")
struct ReleaseFilesTests {
    @Test("--version prints MAJOR.MINOR.PATCH, and CHANGELOG.md has a section for it")
    func version() async throws {
        let r = try await Tool.blobstream(["--version"])
        #expect(r.status == 0 && r.stderr.isEmpty)
        let version = r.text.trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = version.split(separator: ".")
        #expect(parts.count == 3 && parts.allSatisfy { Int($0) != nil }, "\(version)")
        let changelog = try String(contentsOf: Tool.repository.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        #expect(changelog.contains("\n## [\(version)]"), "CHANGELOG.md names version \(version)")
    }

    @Test("LICENSE holds the Apache License 2.0, and the README says so")
    func license() throws {
        let license = try String(contentsOf: Tool.repository.appendingPathComponent("LICENSE"), encoding: .utf8)
        #expect(license.contains("Apache License") && license.contains("Version 2.0, January 2004"))
        #expect(license.contains("END OF TERMS AND CONDITIONS"))
        let readme = try String(contentsOf: Tool.repository.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("Apache License 2.0"))
    }

    @Test("--generate-completion-script writes a bash script that bash parses and that knows every command")
    func bashCompletion() async throws {
        let r = try await Tool.blobstream(["--generate-completion-script", "bash"])
        #expect(r.status == 0, "\(r.stderr)")
        for command in ["cat", "checksum", "info", "ls", "index", "upload", "demo", "--algorithm", "--length"] {
            #expect(r.text.contains(command), "\(command)")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "blobstream-completion-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("blobstream.bash")
        try r.stdout.write(to: script)
        let syntax = try await Tool.run("/bin/bash", ["-n", script.path])
        #expect(syntax.status == 0, "\(syntax.stderr)")
        // Loaded, it completes the command names.
        let complete = try await Tool.run(
            "/bin/bash",
            [
                "-c",
                "source \"$1\"; COMP_WORDS=(blobstream ch); COMP_CWORD=1; COMP_LINE='blobstream ch'; COMP_POINT=13; _blobstream; printf '%s\\n' \"${COMPREPLY[@]}\"",
                "complete", script.path,
            ])
        #expect(complete.text.contains("checksum"), "\(complete.text) \(complete.stderr)")
        for shell in ["zsh", "fish"] {
            let other = try await Tool.blobstream(["--generate-completion-script", shell])
            #expect(other.status == 0 && other.text.contains("checksum"), "\(shell)")
        }
    }
}
