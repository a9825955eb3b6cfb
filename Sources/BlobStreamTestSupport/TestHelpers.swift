import BlobStream
import Foundation
import Glibc

/// Deterministic data for tests: the same bytes on every run and every machine.
public enum TestData {
    /// `count` pseudo-random bytes from a 64-bit linear congruential generator seeded with
    /// `seed` (Knuth's MMIX constants; the high bits of each state).
    public static func pseudoRandom(_ count: Int, seed: UInt64) -> Data {
        var state = seed
        var bytes = [UInt8](repeating: 0, count: count)
        for i in 0..<count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes[i] = UInt8(truncatingIfNeeded: state >> 33)
        }
        return Data(bytes)
    }
}

/// A test's own failure, with the message it prints: `throw TestFailure("no header in \(path)")`.
public struct TestFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    /// A failure that says `description`.
    public init(_ description: String) { self.description = description }
}

/// A folder of its own under the system's temporary folder, with a canonical path (no
/// `//`, no symbolic links, so it matches what `/proc/self/fd` shows). Call `remove()` from
/// a `defer`.
public final class TemporaryDirectory: Sendable {
    /// The folder's absolute path.
    public let path: String

    /// Makes a fresh folder named `<prefix>.XXXXXX`.
    public init(prefix: String = "BlobStreamTests") throws {
        var base = NSTemporaryDirectory()
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        var template = Array((base + "/\(prefix).XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }),
            let real = realpath(made, nil)
        else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "mkdtemp failed: errno \(errno)"])
        }
        path = String(cString: real)
        free(real)
    }

    /// The folder as a file URL.
    public var url: URL { URL(fileURLWithPath: path) }

    /// The path of `name` inside the folder.
    public func path(_ name: String) -> String { path + "/" + name }

    /// Writes `data` at `name` (making the folders on the way) and returns its path.
    @discardableResult
    public func file(_ name: String, _ data: Data) throws -> String {
        let p = path(name)
        try FileManager.default.createDirectory(
            atPath: (p as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: p))
        return p
    }

    /// Replaces the file at `name` with a new one (a new inode) holding `data`: written
    /// aside, then renamed over it.
    public func replace(_ name: String, _ data: Data) throws {
        let p = path(name)
        try data.write(to: URL(fileURLWithPath: p + ".new"))
        guard rename(p + ".new", p) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "rename failed: errno \(errno)"])
        }
    }

    /// Deletes the folder and everything in it (making it writable first).
    public func remove() {
        _ = chmod(path, 0o700)
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A list that several threads append to (progress reports, callbacks), read after.
public final class ConcurrentLog<Element: Sendable>: Sendable {
    private let items = Locked<[Element]>([])

    /// An empty log.
    public init() {}

    /// Appends one element.
    public func add(_ element: Element) { items.withLock { $0.append(element) } }

    /// Everything appended so far, in order.
    public var all: [Element] { items.withLock { $0 } }
}

extension InputStream {
    /// Reads to the end with reads of `chunkSize` bytes; returns the bytes and the last
    /// result (0 for a clean end, −1 for an error).
    public func readToEnd(chunkSize: Int = 65_536) -> (data: Data, last: Int) {
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        while true {
            let n = read(&buffer, maxLength: chunkSize)
            if n <= 0 { return (out, n) }
            out.append(buffer, count: n)
        }
    }
}

/// A mutable box for a result made on another thread: written there before a semaphore is
/// signalled (or a thread ends), read after it was waited for. Unchecked Sendable: that
/// hand-over is the caller's to keep.
public final class TestBox<T>: @unchecked Sendable {
    /// The value.
    public var value: T
    /// A box holding `value`.
    public init(_ value: T) { self.value = value }
}

/// A value handed to another thread once and used only there. Unchecked Sendable: the
/// creating thread does not touch it afterwards.
public struct Handoff<T>: @unchecked Sendable {
    /// The value handed over.
    public let value: T
    /// Wraps `value` for the hand-over.
    public init(value: T) { self.value = value }
}

/// What `BlobInputStream.closeWhileReading` saw.
public struct ClosedWhileReading: Sendable {
    /// The read was still waiting when `close()` was called.
    public var blocked: Bool
    /// What the read returned after `close()`; nil when it had not returned by the deadline.
    public var result: Int?
}

extension BlobInputStream {
    /// Starts a 1-byte `read` on a thread of its own (opening the stream there first when
    /// `opening` is true), checks after `settle` seconds that it is still waiting, then calls
    /// `close()` from another thread and waits up to `deadline` seconds for the read to
    /// return. Neither the read nor the close runs on the calling thread, so a close that
    /// cannot end the read shows up as a nil `result` rather than as a hung test.
    public func closeWhileReading(opening: Bool = false, settle: TimeInterval = 0.2, deadline: TimeInterval = 5)
        -> ClosedWhileReading
    {
        let done = DispatchSemaphore(value: 0)
        let result = TestBox<Int?>(nil)
        let stream = Handoff(value: self)
        Thread {
            if opening { stream.value.open() }
            var byte: UInt8 = 0
            result.value = stream.value.read(&byte, maxLength: 1)
            done.signal()
        }.start()
        Thread.sleep(forTimeInterval: settle)
        let blocked = done.wait(timeout: .now()) == .timedOut
        Thread { stream.value.close() }.start()
        guard done.wait(timeout: .now() + deadline) == .success else {
            return ClosedWhileReading(blocked: blocked, result: nil)
        }
        return ClosedWhileReading(blocked: blocked, result: result.value)
    }
}

extension BlobStoredRegion {
    /// The region's bytes, read with `pread` at its file offset (the descriptor's position
    /// unmoved): what a consumer moving them with `sendfile` would move.
    public func bytesInFile() -> Data {
        var out = Data(count: Int(count))
        let n = out.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, $0.count, off_t(fileOffset)) }
        return out.prefix(max(n, 0))
    }
}
