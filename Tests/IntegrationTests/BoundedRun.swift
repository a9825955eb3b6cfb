import Foundation
import Glibc
import NginxTestServer

/// Runs a program with a time limit: its stdout and stderr collected, its stdin empty (or
/// given bytes), killed (SIGKILL) when the limit passes, so that a hang fails a test instead
/// of stopping the suite. Safe to call from many threads at once: the pipes are made
/// close-on-exec, so no child inherits another run's pipe ends (which would keep a reader
/// waiting for the wrong process).
enum BoundedRun {
    private static let spawnLock = NSLock()

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), looked up at run
    /// time since the Glibc module does not export GNU extensions.
    private static let addCloseFrom:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
            else { return nil }
            return unsafeBitCast(
                symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }()

    /// What the program gets as its stderr.
    enum Stderr: Sendable {
        /// A pipe read into `Result.stderr`.
        case collected
        /// No descriptor 2 at all (a shell's `2>&-`).
        case closed
        /// A pipe whose read end was closed before the program started: writing to it
        /// fails with EPIPE (or raises SIGPIPE).
        case readerGone
    }

    struct Result: Sendable {
        var status: Int32
        var stdout: Data
        var stderr: Data
        /// The run was killed at its time limit.
        var timedOut: Bool
        /// Wall-clock seconds.
        var seconds: Double
        var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    }

    /// Runs `executable ARGUMENTS` for at most `limit` seconds, optionally as another user
    /// (`setpriv` prefix given in `prefix`), waiting on a thread of its own (`ProgramRuns`),
    /// never on the cooperative pool the other tests share. The limit counts from the
    /// program's start, not from the wait for a free slot before it.
    static func run(
        _ executable: String, _ arguments: [String], stdin: Data = Data(), limit: Double = 20,
        workingDirectory: String? = nil, prefix: [String] = [], stderr stderrUse: Stderr = .collected
    ) async -> Result {
        // `runBlocking` does not throw; `ProgramRuns.run` rethrows only what its work throws.
        (try? await ProgramRuns.run {
            runBlocking(
                executable, arguments, stdin: stdin, limit: limit, workingDirectory: workingDirectory, prefix: prefix,
                stderr: stderrUse)
        })!
    }

    /// `run` on the calling thread: for callers already on threads of their own.
    static func runBlocking(
        _ executable: String, _ arguments: [String], stdin: Data = Data(), limit: Double = 20,
        workingDirectory: String? = nil, prefix: [String] = [], stderr stderrUse: Stderr = .collected
    ) -> Result {
        let start = Date()
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        var inPipe: [Int32] = [-1, -1]
        // The pipes are made and the child spawned under one lock, and every end is
        // close-on-exec: no other run's child can inherit them.
        spawnLock.lock()
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0, pipe(&inPipe) == 0 else { fatalError("pipe failed: \(errno)") }
        for fd in outPipe + errPipe + inPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        switch stderrUse {
        case .collected: posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        case .closed: posix_spawn_file_actions_addclose(&actions, 2)
        case .readerGone:
            close(errPipe[0])
            errPipe[0] = -1
            posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        }
        // Close every other descriptor in the child: another test's thread may hold a file
        // open for writing without close-on-exec (a copy of a program it is about to run),
        // and a child keeping it would make that run fail with "Text file busy".
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        let argv = prefix + (workingDirectory.map { ["/usr/bin/env", "-C", $0] } ?? []) + [executable] + arguments
        var cArgs = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, nil, &cArgs, environ)
        spawnLock.unlock()
        precondition(rc == 0, "posix_spawn \(argv[0]) failed: \(rc)")
        close(inPipe[0])
        close(outPipe[1])
        close(errPipe[1])
        // Standard input: written whole (small), then closed.
        stdin.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = write(inPipe[1], raw.baseAddress! + done, raw.count - done)
                if n <= 0 { break }
                done += n
            }
        }
        close(inPipe[1])
        var out = Data()
        var err = Data()
        var fds = [
            pollfd(fd: outPipe[0], events: Int16(POLLIN), revents: 0),
            pollfd(fd: errPipe[0], events: Int16(POLLIN), revents: 0),
        ]
        var open = errPipe[0] >= 0 ? 2 : 1
        if errPipe[0] < 0 { fds.removeLast() }
        var timedOut = false
        let deadline = start.addingTimeInterval(limit)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while open > 0 {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 {
                timedOut = true
                kill(pid, SIGKILL)
                break
            }
            let r = poll(&fds, nfds_t(fds.count), Int32(min(left, 1) * 1000) + 1)
            if r < 0 && errno != EINTR { break }
            for i in fds.indices where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = read(fds[i].fd, &buffer, buffer.count)
                if n > 0 {
                    if i == 0 { out.append(contentsOf: buffer[..<n]) } else { err.append(contentsOf: buffer[..<n]) }
                } else if n == 0 || (errno != EINTR && errno != EAGAIN) {
                    close(fds[i].fd)
                    fds[i].fd = -1
                    open -= 1
                }
            }
        }
        for f in fds where f.fd >= 0 { close(f.fd) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS, or 128 + the signal.
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Result(
            status: code, stdout: out, stderr: err, timedOut: timedOut, seconds: Date().timeIntervalSince(start))
    }
}
