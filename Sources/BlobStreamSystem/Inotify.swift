import Glibc // inotify: swift-system has nothing for it
import SystemPackage

/// An inotify instance (`inotify_init1(IN_NONBLOCK | IN_CLOEXEC)`) watching folders for the
/// changes that matter to a library of files. Closed by `close()`.
package struct Inotify: Sendable {
    /// One event, as much of it as a watcher uses.
    package struct Event: Sendable {
        /// The watch descriptor the event is for.
        package var watch: Int32
        /// The name inside the watched folder ("" for the folder itself).
        package var name: String
        fileprivate var mask: UInt32

        /// The watch was removed (its folder is gone): not a change by itself.
        package var isWatchRemoved: Bool { mask & UInt32(IN_IGNORED) != 0 }
        /// The entry is a folder.
        package var isDirectory: Bool { mask & UInt32(IN_ISDIR) != 0 }
        /// The entry was created or moved in.
        package var isCreation: Bool { mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 }
    }

    /// The events that mean "a file or folder changed" (created, deleted, written, closed
    /// after writing, touched, moved in or out; the folder itself deleted or moved), on
    /// folders only.
    private static let watchMask: UInt32 =
        UInt32(
            IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB
                | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF) | UInt32(IN_ONLYDIR)

    /// The inotify descriptor (for a dispatch read source).
    package let descriptor: FileDescriptor

    /// A new instance, or the failure (out of instances).
    package static func make() -> Result<Inotify, SystemCallFailure> {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return .failure(SystemCallFailure("inotify_init1", Errno(rawValue: errno))) }
        return .success(Inotify(descriptor: FileDescriptor(rawValue: fd)))
    }

    /// `inotify_add_watch` on a folder: the watch descriptor.
    package func watch(_ path: String) -> Result<Int32, SystemCallFailure> {
        let wd = inotify_add_watch(descriptor.rawValue, path, Self.watchMask)
        return wd >= 0 ? .success(wd) : .failure(SystemCallFailure("inotify_add_watch", Errno(rawValue: errno)))
    }

    /// Reads the pending events (empty when none: the descriptor is non-blocking).
    package func readEvents() -> [Event] {
        var events: [Event] = []
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = Glibc.read(descriptor.rawValue, buffer, capacity)
            if n < 0 {
                if errno == EINTR { continue }
                break // EAGAIN: drained
            }
            if n == 0 { break }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= n {
                let wd = buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                var name = ""
                if length > 0 {
                    let bytes = UnsafeRawBufferPointer(start: buffer + offset + header, count: length)
                    let end = bytes.firstIndex(of: 0) ?? length
                    name = String(decoding: bytes[0..<end], as: UTF8.self)
                }
                events.append(Event(watch: wd, name: name, mask: mask))
                offset += header + length
            }
        }
        return events
    }

    /// Closes the descriptor.
    package func close() { try? descriptor.close() }
}
