import Foundation
import Glibc

/// A helper program of the repository's `scripts/` that prints one JSON line when ready and
/// runs until its standard input ends: that pipe is its lifeline. ``stop()`` closes it and
/// waits; if the test process dies, the kernel closes it, so no helper outlives the tests.
final class LifelineProcess: Sendable {
    let pid: pid_t
    /// The first line the program printed.
    let line: String
    private let lifeline: Int32
    private let once = StoreStopOnce()

    /// The repository's `scripts/NAME`.
    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/" + name).path
    }

    /// Starts `scripts/NAME ARGS…` with its standard error in `stderrFile`, and waits for its
    /// first line (the script bounds that wait). Throws with the standard error when it ends
    /// without a line.
    init(_ name: String, _ arguments: [String], stderrFile: String) throws {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        // Close-on-exec: no other child of the test process may hold the lifeline open.
        guard systemPipe2(&toChild, O_CLOEXEC) == 0 else { throw Self.failure("pipe: errno \(errno)") }
        guard systemPipe2(&fromChild, O_CLOEXEC) == 0 else {
            close(toChild[0])
            close(toChild[1])
            throw Self.failure("pipe: errno \(errno)")
        }
        let path = Self.script(name)
        let spawned = Self.spawn(path, [name] + arguments, stdin: toChild[0], stdout: fromChild[1], stderr: stderrFile)
        close(toChild[0])
        close(fromChild[1])
        let pid: pid_t
        switch spawned {
        case .success(let spawnedPID): pid = spawnedPID
        case .failure(let error):
            close(toChild[1])
            close(fromChild[0])
            throw Self.failure("cannot start \(path): errno \(error.code)")
        }
        let line = Self.readLine(fromChild[0])
        close(fromChild[0])
        guard let line else {
            close(toChild[1])
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            let message = (try? String(contentsOfFile: stderrFile, encoding: .utf8)) ?? ""
            throw Self.failure("\(name) did not start: \(message)")
        }
        self.pid = pid
        self.line = line
        self.lifeline = toChild[1]
    }

    /// Closes the lifeline and waits (at most `timeout` seconds, then kills `alsoKill`'s groups
    /// and the program) until the program has exited.
    func stop(timeout: TimeInterval = 30, alsoKill: [Int32] = []) {
        guard once.first() else { return }
        close(lifeline)
        var status: Int32 = 0
        if !Self.waitForExit(pid, timeout: timeout) {
            for other in alsoKill { kill(-other, SIGKILL) }
            kill(pid, SIGKILL)
        }
        waitpid(pid, &status, 0)
    }

    /// Waits until `pid` (a child not yet reaped) has exited, at most `timeout` seconds: on the
    /// kernel's notice (a pidfd becomes readable when the process ends), not a clock. True when
    /// it exited.
    private static func waitForExit(_ pid: pid_t, timeout: TimeInterval) -> Bool {
        let pidfd = systemPidfdOpen(pid, 0)
        // Without pidfds (a kernel before 5.3) the wait is unbounded: closing the lifeline ends it.
        guard pidfd >= 0 else { return true }
        defer { close(pidfd) }
        let deadline = Date(timeIntervalSinceNow: timeout)
        var watched = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        while true {
            let left = Int32(max(0, min(deadline.timeIntervalSinceNow * 1000, Double(Int32.max))))
            let ready = poll(&watched, 1, left)
            if ready > 0 { return true }
            if ready == 0 || errno != EINTR { return false }
        }
    }

    deinit { stop() }

    static func failure(_ text: String) -> SwiftStoreTestServer.Failure {
        SwiftStoreTestServer.Failure(description: text)
    }

    private static func spawn(_ path: String, _ argv: [String], stdin: Int32, stdout: Int32, stderr: String)
        -> Result<pid_t, SpawnError>
    {
        var pid: pid_t = 0
        var cArgs = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Nothing else: a descriptor another test thread has open without close-on-exec (say,
        // a program it is copying, then runs) must not live on in a helper that runs for
        // minutes (the copy's exec would fail with ETXTBSY).
        _ = systemAddCloseFrom(&actions, 3)
        let rc = posix_spawn(&pid, path, &actions, nil, &cArgs, environ)
        return rc == 0 ? .success(pid) : .failure(SpawnError(code: rc))
    }

    struct SpawnError: Error { let code: Int32 }

    /// The first line written to `fd`, or nil when it closes first (the program failed).
    private static func readLine(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            if n == 1 {
                if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(byte)
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return nil
            }
        }
    }
}

/// glibc's `pipe2` (its header declares it only under `_GNU_SOURCE`): a pipe whose two ends
/// are close-on-exec from the start, so that no process spawned meanwhile by another test
/// thread inherits them.
@_silgen_name("pipe2")
private func systemPipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+; declared only under `_GNU_SOURCE`):
/// the child closes every descriptor from `from` on before it runs the program.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func systemAddCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

/// glibc's `pidfd_open` (2.36+; declared only in <sys/pidfd.h>): a descriptor that becomes
/// readable when the process `pid` ends.
@_silgen_name("pidfd_open")
private func systemPidfdOpen(_ pid: pid_t, _ flags: UInt32) -> Int32
