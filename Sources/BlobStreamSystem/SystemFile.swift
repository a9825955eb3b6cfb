import BlobStream
import Glibc // poll, fcntl, readlink, O_NOCTTY: what swift-system does not offer
import SystemPackage

/// An open descriptor and the calls the source modules make on it, over swift-system's
/// `FileDescriptor`. A value: it does not close itself (call `close()`).
///
/// Calls that can be interrupted are retried on `EINTR`. Failures come back as
/// `SystemCallFailure` values in a `Result`; the read paths (`read(into:count:at:)`,
/// `readWhenReady`) allocate nothing, neither on success nor on failure.
package struct SystemFile: Sendable, Equatable {
    /// The descriptor.
    package let descriptor: FileDescriptor

    /// Wraps a descriptor opened elsewhere (a `FileHandle`'s).
    package init(rawDescriptor: Int32) { descriptor = FileDescriptor(rawValue: rawDescriptor) }

    package init(_ descriptor: FileDescriptor) { self.descriptor = descriptor }

    /// The descriptor's number.
    package var rawValue: Int32 { descriptor.rawValue }

    /// `open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)`, plus `O_NONBLOCK` when asked (so that
    /// opening a FIFO without a writer does not hang before `status()` can refuse it; clear
    /// it with `clearNonBlocking()` once the descriptor is wanted). The path is passed as it
    /// is: not normalized (`file/` stays a path through a non-directory).
    /// With `followsLinks: false`, `O_NOFOLLOW`: a symbolic link at `path` fails (`ELOOP`).
    package static func openForReading(_ path: String, nonBlocking: Bool = false, followsLinks: Bool = true)
        -> Result<SystemFile, SystemCallFailure>
    {
        var options: FileDescriptor.OpenOptions = [.closeOnExec, FileDescriptor.OpenOptions(rawValue: O_NOCTTY)]
        if nonBlocking { options.insert(.nonBlocking) }
        if !followsLinks { options.insert(.noFollow) }
        return path.withCString { p in
            do {
                return .success(SystemFile(try FileDescriptor.open(p, .readOnly, options: options)))
            } catch {
                return .failure(SystemCallFailure("open", error as? Errno ?? .ioError))
            }
        }
    }

    /// Clears `O_NONBLOCK` (`fcntl`).
    package func clearNonBlocking() -> Result<Void, SystemCallFailure> {
        let flags = fcntl(rawValue, F_GETFL)
        if flags < 0 { return .failure(SystemCallFailure("fcntl", Errno(rawValue: errno))) }
        if flags & O_NONBLOCK == 0 { return .success(()) }
        if fcntl(rawValue, F_SETFL, flags & ~O_NONBLOCK) < 0 {
            return .failure(SystemCallFailure("fcntl", Errno(rawValue: errno)))
        }
        return .success(())
    }

    /// `fstat`.
    package func status() -> Result<FileStatus, SystemCallFailure> {
        do throws(Errno) {
            return .success(FileStatus(try descriptor.stat()))
        } catch {
            return .failure(SystemCallFailure("fstat", error))
        }
    }

    /// One `pread` of up to `count` bytes at `offset` (the descriptor's own offset is neither
    /// used nor moved); the count, 0 at the end of the file.
    package func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Result<
        Int, SystemCallFailure
    > {
        // Retried on EINTR by swift-system. Nothing is allocated on success; a failure (rare,
        // and final for the sources) boxes the thrown Errno once.
        do {
            return .success(
                try descriptor.read(
                    fromAbsoluteOffset: offset, into: UnsafeMutableRawBufferPointer(start: buffer, count: count)))
        } catch {
            return .failure(SystemCallFailure("pread", error as? Errno ?? .ioError))
        }
    }

    /// `pread`s until `count` bytes are in or the file ends; how many were read.
    package func readFully(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Result<
        Int, SystemCallFailure
    > {
        var done = 0
        while done < count {
            switch read(into: buffer + done, count: count - done, at: offset + Int64(done)) {
            case .success(0): return .success(done)
            case .success(let n): done += n
            case .failure(let failure): return .failure(failure)
            }
        }
        return .success(done)
    }

    /// One `read` at the descriptor's offset, once it is readable: waits with `poll` on the
    /// descriptor and, when given, on `wake`, and fails with `ECANCELED` (call `"poll"`) once
    /// `wake` was signalled. A non-blocking descriptor is waited on the same way. The count,
    /// 0 at the end.
    package func readWhenReady(into buffer: UnsafeMutableRawPointer, count: Int, wake: WakeupPipe?) -> Result<
        Int, SystemCallFailure
    > {
        // Two pollfds in a tuple, not an array: nothing allocated per read.
        var fds = (
            pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake?.readEnd.rawValue ?? -1, events: Int16(POLLIN), revents: 0)
        )
        let watched: nfds_t = wake == nil ? 1 : 2
        while true {
            let r = withUnsafeMutableBytes(of: &fds) { raw in
                poll(raw.baseAddress!.assumingMemoryBound(to: pollfd.self), watched, -1)
            }
            if r < 0 {
                let e = errno
                if e == EINTR { continue }
                return .failure(SystemCallFailure("poll", Errno(rawValue: e)))
            }
            if fds.1.revents != 0 { return .failure(SystemCallFailure("poll", .canceled)) }
            // Retried on EINTR by swift-system. poll said readable, so EAGAIN (a boxed
            // allocation, as every thrown error) comes only from a spurious wake-up.
            do {
                return .success(try descriptor.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: count)))
            } catch let errno as Errno where errno == .resourceTemporarilyUnavailable || errno == .wouldBlock {
                continue
            } catch {
                return .failure(SystemCallFailure("read", error as? Errno ?? .ioError))
            }
        }
    }

    /// `close`; the descriptor is gone afterwards whatever it returns (Linux), so `EINTR` is
    /// not retried and the result is not reported.
    package func close() {
        try? descriptor.close()
    }

    /// What `/proc/self/fd/N` points at (a path, or `pipe:[1234]`), for messages.
    package var target: String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(PATH_MAX) + 1) { buffer in
            let n = readlink("/proc/self/fd/\(rawValue)", buffer.baseAddress!, buffer.count - 1)
            guard n > 0 else { return nil }
            return String(
                decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: n), as: UTF8.self)
        }
    }

    /// Writes all of `bytes` to a new file at `path` (mode 0644), replacing what was there.
    package static func writeFile(_ path: String, _ bytes: [UInt8]) -> Result<Void, SystemCallFailure> {
        let file: FileDescriptor
        do {
            file = try path.withCString { p in
                try FileDescriptor.open(
                    p, .writeOnly, options: [.create, .truncate, .closeOnExec],
                    permissions: [.ownerReadWrite, .groupRead, .otherRead])
            }
        } catch {
            return .failure(SystemCallFailure("open", error as? Errno ?? .ioError))
        }
        defer { try? file.close() }
        do {
            _ = try bytes.withUnsafeBytes { try file.writeAll($0) }
        } catch {
            return .failure(SystemCallFailure("write", error as? Errno ?? .ioError))
        }
        return .success(())
    }
}
